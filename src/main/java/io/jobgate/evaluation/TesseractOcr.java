package io.jobgate.evaluation;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;

/**
 * The shipped evaluator's reader: Debian's {@code tesseract} command line (package {@code tesseract-ocr},
 * English model), image bytes on its standard input, plain text on its standard output. Called by the
 * drop-in route {@code routes/evaluators/tesseract.camel.yaml}; another evaluator route replaces it
 * with a vision model or a production extractor.
 */
public final class TesseractOcr {

    /** Page segmentation: one column of text of varying sizes (an invoice page). */
    static final String PAGE_SEGMENTATION = "4";

    private final String command;
    private final Duration deadline;

    public TesseractOcr(String command, Duration deadline) {
        this.command = command;
        this.deadline = deadline;
    }

    /** Is the command installed here? */
    public boolean available() {
        try {
            Process p = new ProcessBuilder(command, "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Route step: the message's image bytes → the text read from them. */
    public void read(Exchange exchange) throws IOException {
        exchange.getMessage().setBody(read(exchange.getMessage().getBody(byte[].class)));
    }

    public String read(byte[] image) throws IOException {
        Process p = new ProcessBuilder(List.of(command, "stdin", "stdout", "--psm", PAGE_SEGMENTATION, "-l", "eng"))
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        Thread feeder = new Thread(() -> {
            try (var in = p.getOutputStream()) {
                in.write(image);
            } catch (IOException ignored) {
                // the process ended early: its exit code says why
            }
        }, "tesseract-input");
        feeder.setDaemon(true);
        feeder.start();
        String text;
        try (InputStream out = p.getInputStream()) {
            text = new String(out.readAllBytes(), StandardCharsets.UTF_8);
        }
        try {
            if (!p.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IOException(command + " took longer than " + deadline.toMillis() + " ms");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException(command + " interrupted");
        }
        if (p.exitValue() != 0) {
            throw new IOException(command + " exited with " + p.exitValue());
        }
        return text;
    }
}
