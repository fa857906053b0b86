/**
 * The benchmark command: it drives a gateway from outside; nothing of the gateway imports it.
 *
 * <p>May use: anything.
 */
package io.jobgate.bench;
