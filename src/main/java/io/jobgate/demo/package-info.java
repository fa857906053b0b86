/**
 * The demo command: drives a running gateway over HTTP; nothing of the gateway imports it.
 *
 * <p>May use: common.
 */
package io.jobgate.demo;
