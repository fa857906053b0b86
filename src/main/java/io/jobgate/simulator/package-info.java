/**
 * The bundled provider simulator (a side part of the gateway, and a command of its own); nothing of the gateway imports it.
 *
 * <p>May use: common, infra, upload, output, reconcile.
 */
package io.jobgate.simulator;
