/**
 * Accepting a job: request validation, idempotency keys, admission control and the group-committed admission transaction (job, outbox events, debit, reservations).
 *
 * <p>May use: common, job, tenant, preset, provider, upload, relay (its wake-up), infra (settings), pool (a job's pool and its first member), fate (a placement's answer).
 */
package io.jobgate.admission;
