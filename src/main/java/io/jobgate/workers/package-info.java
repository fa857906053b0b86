/**
 * External workers (docs/workers.md): the tasks of pull members, leased over HTTP by workers in any language under a
 * token, extended by heartbeats, ended by complete or fail; the member's adapter writes and reads them.
 *
 * <p>May use: common, infra (settings).
 */
package io.jobgate.workers;
