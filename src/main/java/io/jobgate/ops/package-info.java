/**
 * Health checks.
 *
 * <p>May use: nothing of jobgate beyond the JDK and Camel.
 */
package io.jobgate.ops;
