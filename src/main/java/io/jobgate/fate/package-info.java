/**
 * The rulebook of a job's life: what an attempt's evidence means for its job ({@link io.jobgate.fate.Outcomes#decide}),
 * decided in one pure function that the worker, the reconciler (poller, webhooks, admin repair), the start and the
 * sweeper all ask. It writes nothing: each caller applies the {@link io.jobgate.fate.Fate} it is given. The caps and
 * the lifetime (no attempt beyond {@code max_attempts}, none starting at or after {@code expires_at}) are one rule here.
 *
 * <p>May use: common, job, adapter.
 */
package io.jobgate.fate;
