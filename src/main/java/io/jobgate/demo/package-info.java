/**
 * The demo and send-job commands: drive a running gateway over HTTP and its JMS intake; nothing of
 * the gateway imports them.
 *
 * <p>May use: common.
 */
package io.jobgate.demo;
