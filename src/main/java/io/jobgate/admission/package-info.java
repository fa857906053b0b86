/**
 * Accepting a job: request validation, idempotency keys, admission control and the group-committed admission transaction (job, outbox events, debit, reservations).
 *
 * <p>May use: common, job, tenant, preset, provider, upload, relay (its wake-up), infra (settings).
 */
package io.jobgate.admission;
