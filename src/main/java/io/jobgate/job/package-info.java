/**
 * A job's life: its record and statuses, the state machine (JobTransitions: every status change, its effects, the one finalize), error categories and the attempt caps, job ids and reads.
 *
 * <p>May use: common.
 */
package io.jobgate.job;
