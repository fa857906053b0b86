/**
 * The {@code hawtio} command: the Hawtio console in an embedded Jetty, its Jolokia forwarded to a
 * running gateway's. A command of its own: nothing of the gateway imports it, so the gateway's start
 * never loads Jetty or the war.
 *
 * <p>May use: nothing of jobgate.
 */
package io.jobgate.hawtio;
