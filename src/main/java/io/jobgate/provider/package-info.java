/**
 * Providers' settings (config/providers/*.properties): kinds, prices, deadlines, concurrency.
 *
 * <p>May use: common, preset, upload, infra.
 */
package io.jobgate.provider;
