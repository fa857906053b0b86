/**
 * Tenants, their API keys, limits, credit grants and JMS producers.
 *
 * <p>May use: common.
 */
package io.jobgate.tenant;
