/**
 * Outputs on their way to being readable: quarantine, checks (media type, size), promotion with the evaluation manifest (the rules of routes/outputs.camel.yaml).
 *
 * <p>May use: common, job, adapter, preset, provider, upload.
 */
package io.jobgate.output;
