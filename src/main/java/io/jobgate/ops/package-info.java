/**
 * Health checks, and jobgate's metrics (Meters: counters where the work is done, gauges refreshed from PostgreSQL).
 *
 * <p>May use: nothing of jobgate beyond the JDK and Camel.
 */
package io.jobgate.ops;
