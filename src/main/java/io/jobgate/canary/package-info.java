/**
 * Canary adapter revisions (issue 14, docs/canary.md): which attempts go to a provider's candidate
 * revision, the gates that judge it over a sliding window of its attempts, its automatic stop and
 * rollback onto the stable revision, and the operator's stop, promote and restart.
 *
 * <p>May use: common, provider, job (the state machine: a rollback is a transition), fate (where an attempt runs).
 */
package io.jobgate.canary;
