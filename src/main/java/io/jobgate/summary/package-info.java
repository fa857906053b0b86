/**
 * The summary of a call (issue 39, docs/summaries.md): a transcription job may ask for one; once its
 * transcript succeeded, {@link io.jobgate.summary.SummaryOrders} orders it as a job of its own (kind
 * {@code summary}) under the transcription job, through the one admission writer (price, debit, usage,
 * caps), and {@link io.jobgate.summary.JobSummaries} shows it on the transcription job.
 *
 * <p>May use: common, job, admission (its writer and limits), adapter (a transcript's text), preset, provider.
 */
package io.jobgate.summary;
