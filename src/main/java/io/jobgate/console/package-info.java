/**
 * The operator console (docs/console.md): every tenant's jobs searched and each job's whole story, as pages in the
 * browser and as the admin API's JSON ({@code GET /v1/admin/jobs}, {@code /v1/admin/jobs/{id}}).
 *
 * <p>May use: common, job, api (its replies), notify (a job's webhook deliveries), evaluation (a job's evaluation), reconcile (reconcile now), canary (its state and actions), pool (its members' state), provider (the providers' limits).
 */
package io.jobgate.console;
