/**
 * The doors: the HTTP API (jobs, uploads, usage, admin, webhooks), its problem answers, and the JMS intake for legacy producers.
 *
 * <p>May use: common, job, admission, adapter, reconcile, provider, preset (operator defaults), tenant, upload, usage, ops (metrics), canary, evaluation, notify (tenants' webhooks), summary (a call's summary), pool (its members' state and drain), workers (the pull members' tasks).
 */
package io.jobgate.api;
