/**
 * The parts under the gateway: embedded PostgreSQL, Artemis and S3 server, side parts, settings, pools and retried transactions.
 *
 * <p>May use: common.
 */
package io.jobgate.infra;
