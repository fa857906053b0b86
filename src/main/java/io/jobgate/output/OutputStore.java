package io.jobgate.output;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.job.ErrorCategory;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;

import io.jobgate.common.Json;
import io.jobgate.common.Digests;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.upload.MediaTypes;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.component.aws2.s3.AWS2S3Constants;

/**
 * A successful adapter's output (URL to fetch, base64 bytes or text) on its way to being readable:
 * quarantined, checked, promoted with its evaluation manifest. Nothing a provider returned is
 * readable before it was checked. The flow and its S3 operations (camel-aws2-s3) are the route
 * {@code routes/outputs.camel.yaml}; this bean holds the steps' rules.
 */
public final class OutputStore {

    /** The route that quarantines, checks and promotes (routes/outputs.camel.yaml). */
    public static final String ROUTE = "direct:store-output";
    /** Exchange property holding the {@link Storing} state between the route's steps. */
    static final String STORING = "jobgateOutput";

    private final ProducerTemplate producer;
    private final String bucket;
    private final long maxBytes;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private final PresetCatalog presets;

    public OutputStore(ProducerTemplate producer, String bucket, long maxBytes, PresetCatalog presets) {
        this.producer = producer;
        this.presets = presets;
        this.bucket = bucket;
        this.maxBytes = maxBytes;
    }

    /** An output that could not be fetched or is too big: the attempt fails with this category. */
    public static final class OutputUnavailable extends Exception {
        private final ErrorCategory category;

        OutputUnavailable(ErrorCategory category, String message) {
            super(message);
            this.category = category;
        }

        public ErrorCategory category() {
            return category;
        }
    }

    /**
     * The output's signal (a worker whose lease was lost, evidence for a job that ended meanwhile)
     * may no longer finish the job: nothing was promoted, the quarantine object is gone.
     */
    public static final class Superseded extends Exception {
        Superseded(String message) {
            super(message);
        }
    }

    /** Where one output stands on its way through the route; the route branches on {@link #verdict}. */
    public static final class Storing {
        final OutputSubject job;
        final AdapterResult result;
        final Duration deadline;
        final BooleanSupplier stillOurs;
        Preset preset;
        Preset.AspectSize size;
        byte[] bytes;
        String quarantineKey;
        OutputCheck.Checked checked;
        String sha256;
        String outputKey;
        String manifestKey;
        /** {@code unavailable}, {@code refused}, {@code superseded} or {@code promote}; null while undecided. */
        String verdict;
        OutputUnavailable failure;

        Storing(OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs) {
            this.job = job;
            this.result = result;
            this.deadline = deadline;
            this.stillOurs = stillOurs;
        }

        public String getVerdict() {
            return verdict;
        }
    }

    private volatile java.util.function.Consumer<String> faults = step -> { };

    /** Test hook: a crash injected between the steps of storing an output. */
    public void injectFaults(java.util.function.Consumer<String> point) {
        this.faults = point;
    }

    /**
     * Quarantine, check, promote, through {@link #ROUTE}. The output is written under
     * {@code quarantine/<job>/<attempt>/output-<store id>} (its own key per call: a webhook and the
     * poller may store the same task's output at once), checked (media type by magic bytes, pixel
     * size of the aspect class, byte cap), then, only while {@code stillOurs} holds, copied to
     * {@code outputs/<tenant>/<job>/output.<ext>} with its manifest beside it, and the quarantine
     * object deleted. A refused output stays in quarantine, never readable.
     *
     * @param stillOurs asked right before promotion: may this signal still finish the job? (A stale
     *                  worker must not overwrite the output of the attempt that replaced it.)
     * @return the result record stored with the job (JSON)
     */
    public String store(OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs)
            throws OutputUnavailable, Superseded {
        Exchange done = producer.send(ROUTE, e -> begin(e, job, result, deadline, stillOurs));
        if (done.getException() != null) {
            throw done.getException() instanceof RuntimeException r ? r : new IllegalStateException(done.getException());
        }
        return finish(done);
    }

    /** Sets up {@code exchange} for {@link #ROUTE} (a route that calls it itself, as the worker's does). */
    public void begin(Exchange exchange, OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs) {
        exchange.setProperty(STORING, new Storing(job, result, deadline, stillOurs));
    }

    /**
     * What {@link #ROUTE} decided for the output on {@code exchange}.
     *
     * @return the result record stored with the job (JSON)
     */
    public String finish(Exchange exchange) throws OutputUnavailable, Superseded {
        Storing storing = exchange.getProperty(STORING, Storing.class);
        OutputSubject job = storing.job;
        switch (storing.verdict) {
            case "unavailable", "refused" -> throw storing.failure;
            case "superseded" -> throw new Superseded("job " + job.jobId() + " moved on before its output was promoted");
            default -> {
                return record(storing);
            }
        }
    }

    /** Step 1: the output's bytes (fetched, decoded or as text), within the byte cap; the quarantine put. */
    public void quarantine(Exchange exchange) {
        Storing s = exchange.getProperty(STORING, Storing.class);
        s.preset = presets.resolve(s.job.presetId(), s.job.presetVersion());
        s.size = PresetCatalog.aspect(s.preset, s.job.aspectClass());
        try {
            s.bytes = bytes(s.result, s.deadline);
        } catch (OutputUnavailable e) {
            s.verdict = "unavailable";
            s.failure = e;
            return;
        }
        s.quarantineKey = "quarantine/" + s.job.jobId() + "/" + s.job.attempt() + "/output-"
                + UUID.randomUUID().toString().substring(0, 8);
        Message m = exchange.getMessage();
        m.setBody(s.bytes);
        m.setHeader(AWS2S3Constants.KEY, s.quarantineKey);
        // The sniffed type (the checks come next): a promoted copy keeps it.
        m.setHeader(AWS2S3Constants.CONTENT_TYPE, MediaTypes.sniff(s.bytes)
                .orElse(s.preset.outputMediaTypes().isEmpty() ? "application/octet-stream" : s.preset.outputMediaTypes().get(0)));
        m.setHeader(AWS2S3Constants.CONTENT_LENGTH, (long) s.bytes.length);
    }

    /** Step 2: the checks; then, while the signal may still finish the job, the copy to the readable key. */
    public void check(Exchange exchange) {
        faults.accept("quarantined");
        Storing s = exchange.getProperty(STORING, Storing.class);
        try {
            s.checked = OutputCheck.check(s.bytes, s.preset, s.size);
        } catch (OutputCheck.Refused refused) {
            s.verdict = "refused";
            s.failure = new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, refused.getMessage() + " (kept at " + s.quarantineKey + ")");
            return;
        }
        s.verdict = s.stillOurs.getAsBoolean() ? "promote" : "superseded";
        s.sha256 = Digests.sha256Hex(s.bytes);
        String prefix = "outputs/" + s.job.tenantId() + "/" + s.job.jobId() + "/";
        s.outputKey = prefix + "output" + MediaTypes.extension(s.checked.mediaType());
        s.manifestKey = prefix + "manifest.json";
        Message m = exchange.getMessage();
        m.setHeader(AWS2S3Constants.KEY, s.quarantineKey);
        m.setHeader(AWS2S3Constants.BUCKET_DESTINATION_NAME, bucket);
        m.setHeader(AWS2S3Constants.DESTINATION_KEY, s.outputKey);
    }

    /** Step 3: the evaluation manifest beside the promoted output. */
    public void manifest(Exchange exchange) {
        Storing s = exchange.getProperty(STORING, Storing.class);
        byte[] json = Json.write(Manifest.of(s.job, s.checked, s.sha256, s.outputKey)).getBytes(StandardCharsets.UTF_8);
        Message m = exchange.getMessage();
        m.setBody(json);
        m.setHeader(AWS2S3Constants.KEY, s.manifestKey);
        m.setHeader(AWS2S3Constants.CONTENT_TYPE, "application/json");
        m.setHeader(AWS2S3Constants.CONTENT_LENGTH, (long) json.length);
    }

    /** Step 4: promoted; the quarantine object is deleted next. */
    public void promoted(Exchange exchange) {
        faults.accept("promoted");
        exchange.getMessage().setHeader(AWS2S3Constants.KEY, exchange.getProperty(STORING, Storing.class).quarantineKey);
    }

    private String record(Storing s) {
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("output_key", s.outputKey);
        record.put("manifest_key", s.manifestKey);
        record.put("media_type", s.checked.mediaType());
        record.put("width", s.checked.width());
        record.put("height", s.checked.height());
        record.put("bytes", s.bytes.length);
        record.put("sha256", s.sha256);
        record.put("adapter", s.job.adapter());
        record.put("adapter_revision", s.job.revision());
        record.put("attempt", s.job.attempt());
        return Json.write(record);
    }

    private byte[] bytes(AdapterResult result, Duration deadline) throws OutputUnavailable {
        byte[] bytes;
        if (result.outputText() != null) {
            bytes = result.outputText().getBytes(StandardCharsets.UTF_8);
        } else if (result.outputBase64() != null) {
            try {
                bytes = Base64.getMimeDecoder().decode(result.outputBase64());
            } catch (IllegalArgumentException e) {
                throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output is not valid base64");
            }
        } else {
            bytes = fetch(result.outputUrl(), deadline);
        }
        if (bytes.length > maxBytes) {
            throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, "output of " + bytes.length + " bytes exceeds " + maxBytes);
        }
        return bytes;
    }

    private byte[] fetch(String url, Duration deadline) throws OutputUnavailable {
        try {
            HttpResponse<InputStream> reply = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(deadline).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = reply.body()) {
                if (reply.statusCode() / 100 != 2) {
                    throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download answered HTTP " + reply.statusCode());
                }
                byte[] bytes = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + 1));
                if (bytes.length > maxBytes) {
                    throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, "output exceeds " + maxBytes + " bytes");
                }
                return bytes;
            }
        } catch (IllegalArgumentException e) {
            throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output URL is not a URL");
        } catch (IOException e) {
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download failed: " + e.getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download interrupted");
        }
    }
}
