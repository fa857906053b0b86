/**
 * Health checks, and jobgate's metrics (Meters: counters where the work is done, gauges refreshed
 * from PostgreSQL; TransitionMeters: the meters that follow the state machine's transitions).
 *
 * <p>May use: job (the state machine's observer hook; the counts of jobs the gauges show).
 */
package io.jobgate.ops;
