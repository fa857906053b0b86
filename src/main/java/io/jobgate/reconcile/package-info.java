/**
 * Evidence about jobs waiting on a provider (webhooks, the poller, operator repair), applied through the state machine; webhook signatures.
 *
 * <p>May use: common, job, fate, adapter, output, provider, preset, infra, canary.
 */
package io.jobgate.reconcile;
