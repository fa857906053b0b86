/**
 * The lease and attempt lifecycle: the worker route's steps, leases, the provider gate, recording outcomes, the sweeper of expired leases and lifetimes.
 *
 * <p>May use: common, job, fate, adapter, output, provider, preset, upload, relay (message headers), infra, ops (metrics), canary, pool (an attempt moved among its job's pool).
 */
package io.jobgate.worker;
