/**
 * Presets: immutable, versioned prompt templates with bounded inputs and aspect classes.
 *
 * <p>May use: common.
 */
package io.jobgate.preset;
