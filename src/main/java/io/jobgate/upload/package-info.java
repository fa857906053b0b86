/**
 * Uploads: media type sniffing, audio duration, storage by digest.
 *
 * <p>May use: common.
 */
package io.jobgate.upload;
