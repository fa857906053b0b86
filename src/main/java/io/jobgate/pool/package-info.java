/**
 * Provider pools (config/pools/*.properties): a job kind's members in order, their weights and how long each one's
 * closed gate is waited out; checked against the providers (and the tenants' rules of where their jobs run against
 * both) at start, and the facts of a placement gathered for the rule in {@code fate}
 * ({@link io.jobgate.fate.PoolPlacements}) — which member an attempt goes to.
 *
 * <p>May use: common, job (the providers' gates), fate (the placement rule), provider, preset, infra (settings), tenant (its rules), ops (the pools' metrics).
 */
package io.jobgate.pool;
