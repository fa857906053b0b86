/**
 * Providers' settings (config/providers/*.properties): kinds, prices, deadlines, concurrency, the size table (aspect class → exact pixel size), the error table, and which providers may serve which preset classes right now.
 *
 * <p>May use: common, job (error categories), preset, upload, infra.
 */
package io.jobgate.provider;
