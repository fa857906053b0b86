/**
 * The transactional outbox relay: fair dispatch rounds, publishing to Artemis, cross-instance wake-ups, dead letters.
 *
 * <p>May use: common, job, fate, infra.
 */
package io.jobgate.relay;
