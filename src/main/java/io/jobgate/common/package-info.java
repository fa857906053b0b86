/**
 * Ground types every part shares: JSON helpers, RFC 9457 problem documents, digests.
 *
 * <p>May use: nothing of jobgate.
 */
package io.jobgate.common;
