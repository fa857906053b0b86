/**
 * Evaluation (issue 14, docs/evaluation.md): reads an invoice output back (an evaluator route, the
 * shipped one runs Tesseract OCR) and scores each field of its evaluation manifest's expected answers.
 *
 * <p>May use: common, job (a job status in its SQL).
 */
package io.jobgate.evaluation;
