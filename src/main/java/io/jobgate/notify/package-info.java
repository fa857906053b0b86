/**
 * Tenants' webhooks: endpoints (their URLs checked against SSRF, their signing secrets and rotation),
 * the fan-out of a job's status changes into deliveries, and their sending by the Standard Webhooks
 * specification with retries carried by PostgreSQL (docs/webhooks.md).
 *
 * <p>May use: common, job, ops.
 */
package io.jobgate.notify;
