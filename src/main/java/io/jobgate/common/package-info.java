/**
 * Ground types every part shares: JSON helpers, RFC 9457 problem documents, digests, the typed reads of settings (SettingsReader, for the packages' wiring).
 *
 * <p>May use: nothing of jobgate.
 */
package io.jobgate.common;
