/**
 * External workers (docs/workers.md): the tasks of pull members, leased over HTTP by workers in any language under a
 * token, extended by heartbeats, ended by complete or fail; the member's adapter writes and reads them. Beside them the
 * workers seen, what operators see of both, and the removal of stored outputs once their job is final.
 *
 * <p>May use: common, infra (settings), ops (the pull members' metrics).
 */
package io.jobgate.workers;
