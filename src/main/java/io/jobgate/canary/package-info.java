/**
 * Canary adapter revisions (issue 14, docs/canary.md): the gates that judge a candidate revision
 * over a sliding window of its attempts. Routing a share of attempts to a candidate, stopping and
 * rolling it back are the next slices.
 *
 * <p>May use: common, provider.
 */
package io.jobgate.canary;
