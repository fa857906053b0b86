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
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;

import io.jobgate.common.Json;
import io.jobgate.common.Digests;
import io.jobgate.preset.AspectClass;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.upload.MediaTypes;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.component.aws2.s3.AWS2S3Constants;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A successful adapter's output (URL to fetch, base64 bytes or text) on its way to being readable:
 * quarantined, checked, promoted with its evaluation manifest. Nothing a provider returned is
 * readable before it was checked. The flow and its S3 operations (camel-aws2-s3) are the routes
 * {@code routes/outputs.camel.yaml}; this bean holds the steps' rules.
 */
public final class OutputStore {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(OutputStore.class);

    /** The route that quarantines, checks and promotes (routes/outputs.camel.yaml). */
    public static final String ROUTE = "direct:store-output";
    /** Exchange property holding the {@link Request}; each step's result is a record of its own. */
    static final String STORING = "jobgateOutput";

    private final ProducerTemplate producer;
    private final String bucket;
    private final long maxBytes;
    private volatile long inMemoryMaxBytes;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private final PresetCatalog presets;
    private final S3Client s3;

    /**
     * @param inMemoryMaxBytes outputs up to this size are checked in memory and written once, to their
     *                         readable key (no quarantine put, copy and delete); bigger ones go through quarantine
     * @param s3               video outputs stream into quarantine by multipart upload, never held whole
     */
    public OutputStore(ProducerTemplate producer, String bucket, long maxBytes, long inMemoryMaxBytes, PresetCatalog presets,
                       S3Client s3) {
        this.s3 = s3;
        this.producer = producer;
        this.inMemoryMaxBytes = inMemoryMaxBytes;
        this.presets = presets;
        this.bucket = bucket;
        this.maxBytes = maxBytes;
    }

    /**
     * Why an output could not be had (download, base64, byte cap), from deep in the reading of it up to
     * the step that turns it into a {@link StoreResult.Refused}; it never leaves this class.
     */
    private static final class OutputUnavailable extends Exception {
        private final ErrorCategory category;

        OutputUnavailable(ErrorCategory category, String message) {
            super(message);
            this.category = category;
        }

        StoreResult.Refused refused() {
            return new StoreResult.Refused(category, getMessage());
        }
    }

    /**
     * What the route is asked to store (property {@value #STORING}, set by {@link #begin}); {@code hold}:
     * a canary candidate's output, checked and kept in quarantine, never promoted.
     */
    public record Request(OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs, boolean hold) {
    }

    /**
     * Step quarantine's result: the output's bytes and their quarantine key; {@code inMemory}: small enough to be
     * checked before any write (the route then puts nothing in quarantine unless the checks refuse it).
     */
    record Quarantined(Preset preset, AspectClass aspect, PixelSize size, byte[] bytes, String key, boolean inMemory,
                       Streamed streamed) {
        Quarantined(Preset preset, AspectClass aspect, PixelSize size, byte[] bytes, String key, boolean inMemory) {
            this(preset, aspect, size, bytes, key, inMemory, null);
        }

        long length() {
            return streamed != null ? streamed.scan().bytes() : bytes.length;
        }
    }

    /** A video already streamed into its quarantine key: what its container said, and its digest. */
    record Streamed(Mp4Probe.Scan scan, String sha256) {
    }

    /** The check steps' result: what the checks found, and where the output is promoted to. */
    record Checked(OutputCheck.Checked checked, String sha256, String outputKey, String manifestKey) {
    }

    /**
     * The routes branch on this property: null while undecided, then one of {@code unavailable},
     * {@code refused}, {@code promote}, {@code hold}, {@code superseded} ({@link #finish} turns it into a
     * {@link StoreResult}).
     */
    static final String VERDICT = "jobgateOutputVerdict";
    static final String QUARANTINED = "jobgateOutputQuarantined";
    /** True for an output checked in memory before any write (store-output's small-output branch). */
    static final String IN_MEMORY = "jobgateOutputInMemory";
    /** True for a video streamed into quarantine by step quarantine itself (step write-quarantine puts nothing). */
    static final String STREAMED = "jobgateOutputStreamed";
    static final String CHECKED = "jobgateOutputChecked";
    /** The {@link StoreResult.Refused} of an output that could not be had or that the checks refused. */
    static final String FAILURE = "jobgateOutputFailure";

    private volatile java.util.function.Consumer<String> faults = step -> { };

    /** Test hook: a crash injected between the steps of storing an output. */
    public void injectFaults(java.util.function.Consumer<String> point) {
        this.faults = point;
    }

    /** Test hook: outputs up to this size take the in-memory path (0: every output goes through quarantine). */
    public void checkInMemoryUpTo(long bytes) {
        this.inMemoryMaxBytes = bytes;
    }

    /**
     * Quarantine, check, promote, through {@link #ROUTE}. The output is written under
     * {@code quarantine/<job>/<attempt>/output-<store id>} (its own key per call: a webhook and the
     * poller may store the same task's output at once), checked (media type by magic bytes, pixel
     * size the adapter renders the aspect class at, byte cap), then, only while {@code stillOurs} holds, copied to
     * {@code outputs/<tenant>/<job>/output.<ext>} with its manifest beside it, and the quarantine
     * object deleted. A refused output stays in quarantine, never readable.
     *
     * @param stillOurs asked right before promotion: may this signal still finish the job? (A stale
     *                  worker must not overwrite the output of the attempt that replaced it.)
     * @param hold      a canary candidate's output: checked, then kept in quarantine ({@link StoreResult.Held})
     * @return what was done with the output; a failure of S3 or of the route is thrown
     */
    public StoreResult store(OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs,
                             boolean hold) {
        Exchange done = producer.send(ROUTE, e -> begin(e, job, result, deadline, stillOurs, hold));
        if (done.getException() != null) {
            throw done.getException() instanceof RuntimeException r ? r : new IllegalStateException(done.getException());
        }
        return finish(done);
    }

    /** Sets up {@code exchange} for {@link #ROUTE} (a route that calls it itself, as the worker's does). */
    public void begin(Exchange exchange, OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs) {
        begin(exchange, job, result, deadline, stillOurs, false);
    }

    public void begin(Exchange exchange, OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs,
                      boolean hold) {
        exchange.setProperty(STORING, new Request(job, result, deadline, stillOurs, hold));
    }

    /** What {@link #ROUTE} did with the output on {@code exchange}, by the verdict its steps set. */
    public StoreResult finish(Exchange exchange) {
        String verdict = exchange.getProperty(VERDICT, String.class);
        if (verdict == null) {
            throw new IllegalStateException("the output route ended without a verdict");
        }
        return switch (verdict) {
            case "unavailable", "refused" -> exchange.getProperty(FAILURE, StoreResult.Refused.class);
            case "hold" -> new StoreResult.Held(record(exchange));
            case "superseded" -> new StoreResult.Superseded();
            case "promote" -> new StoreResult.Promoted(record(exchange));
            default -> throw new IllegalStateException("unknown output verdict " + verdict);
        };
    }

    /**
     * Step quarantine: the output's bytes (fetched, decoded or as text), within the byte cap; the quarantine put
     * of a big output. A small one (up to the in-memory size) is checked first and written once to its
     * readable key: the S3 server's per-object work (a put, a copy, a delete) is most of a job's cost.
     */
    public void quarantine(Exchange exchange) {
        Request r = exchange.getProperty(STORING, Request.class);
        Preset preset = presets.resolve(r.job().presetId(), r.job().presetVersion());
        if (io.jobgate.preset.VideoOrder.KIND.equals(preset.kind())) {
            streamVideo(exchange, r, preset);
            return;
        }
        byte[] bytes;
        try {
            bytes = bytes(r.result(), r.deadline());
        } catch (OutputUnavailable e) {
            decide(exchange, "unavailable", e.refused());
            return;
        }
        String key = "quarantine/" + r.job().jobId() + "/" + r.job().attempt() + "/output-"
                + UUID.randomUUID().toString().substring(0, 8);
        exchange.setProperty(QUARANTINED, new Quarantined(preset, PresetCatalog.aspect(preset, r.job().aspectClass()), r.job().size(),
                bytes, key, bytes.length <= inMemoryMaxBytes));
        exchange.setProperty(IN_MEMORY, bytes.length <= inMemoryMaxBytes);
        Message m = exchange.getMessage();
        m.setBody(bytes);
        m.setHeader(AWS2S3Constants.KEY, key);
        // The sniffed type (the checks come next): a promoted copy keeps it.
        m.setHeader(AWS2S3Constants.CONTENT_TYPE, MediaTypes.sniff(bytes)
                .orElse(preset.outputMediaTypes().isEmpty() ? "application/octet-stream" : preset.outputMediaTypes().get(0)));
        m.setHeader(AWS2S3Constants.CONTENT_LENGTH, (long) bytes.length);
    }

    /**
     * Steps check-in-memory and check-quarantined: the checks; then, while the signal may still finish the job, the copy to the readable key
     * (quarantined output) or the one put to it (in memory). An output the checks refuse is kept in
     * quarantine for an operator: where it is already, or put there now (in memory).
     */
    public void check(Exchange exchange) {
        Request r = exchange.getProperty(STORING, Request.class);
        Quarantined q = exchange.getProperty(QUARANTINED, Quarantined.class);
        if (!q.inMemory()) {
            faults.accept("quarantined");
        }
        OutputCheck.Checked checked;
        try {
            checked = q.streamed() != null ? OutputCheck.checkVideo(q.streamed().scan(), q.preset(), q.size(), r.job().video())
                    : OutputCheck.check(q.bytes(), q.preset(), q.aspect(), q.size());
        } catch (OutputCheck.Refused refused) {
            // The tenant reads the reason; where the refused object lies is for operators (the log) only.
            LOG.info("output of job {} attempt {} refused ({}); kept in quarantine at {}", r.job().jobId(),
                    r.job().attempt(), refused.getMessage(), q.key());
            decide(exchange, "refused", new StoreResult.Refused(ErrorCategory.INVALID_OUTPUT,
                    refused.getMessage() + " (the output is kept for review)"));
            return; // the message is still the quarantine put of step quarantine
        }
        String prefix = "outputs/" + r.job().tenantId() + "/" + r.job().jobId() + "/";
        String outputKey = r.hold() ? q.key() : prefix + "output" + MediaTypes.extension(checked.mediaType());
        // A candidate's output stays at its quarantine key, its manifest beside it (evaluation evidence).
        exchange.setProperty(CHECKED, new Checked(checked, q.streamed() != null ? q.streamed().sha256() : Digests.sha256Hex(q.bytes()),
                outputKey, r.hold() ? q.key() + ".manifest.json" : prefix + "manifest.json"));
        faults.accept("checked");
        if (r.hold()) {
            LOG.info("output of job {} attempt {} (candidate revision {}) checked and held in quarantine at {}", r.job().jobId(),
                    r.job().attempt(), r.job().revision(), q.key());
            decide(exchange, "hold", null);
            exchange.getMessage().setHeader(AWS2S3Constants.KEY, q.key()); // in memory: the put of step quarantine, to quarantine
            return;
        }
        decide(exchange, r.stillOurs().getAsBoolean() ? "promote" : "superseded", null);
        Message m = exchange.getMessage();
        // The readable object carries its own record (PromotedOutput): a worker that dies before the manifest is
        // written leaves an output the sweeper can still succeed the job with.
        Map<String, String> record = promotedOutput(exchange).metadata();
        if (q.inMemory()) {
            m.setHeader(AWS2S3Constants.KEY, outputKey); // body, type and length: step quarantine's, checked
            m.setHeader(AWS2S3Constants.METADATA, record);
        } else {
            // Step copy-to-readable sends this request as it is (pojoRequest): the copy's metadata replaced by the record.
            // camel-aws2-s3 still reads the key headers first, so they name the same objects.
            m.setHeader(AWS2S3Constants.KEY, q.key());
            m.setHeader(AWS2S3Constants.BUCKET_DESTINATION_NAME, bucket);
            m.setHeader(AWS2S3Constants.DESTINATION_KEY, outputKey);
            m.setBody(software.amazon.awssdk.services.s3.model.CopyObjectRequest.builder()
                    .sourceBucket(bucket).sourceKey(q.key()).destinationBucket(bucket).destinationKey(outputKey)
                    .metadataDirective(software.amazon.awssdk.services.s3.model.MetadataDirective.REPLACE)
                    .contentType(checked.mediaType()).metadata(record).build());
        }
    }

    /** Steps manifest-*: the evaluation manifest beside the promoted (or held) output. */
    public void manifest(Exchange exchange) {
        faults.accept("output-written");
        Request r = exchange.getProperty(STORING, Request.class);
        Checked c = exchange.getProperty(CHECKED, Checked.class);
        byte[] json = Json.write(Manifest.of(r.job(), c.checked(), c.sha256(), c.outputKey())).getBytes(StandardCharsets.UTF_8);
        Message m = exchange.getMessage();
        m.setBody(json);
        m.setHeader(AWS2S3Constants.KEY, c.manifestKey());
        m.setHeader(AWS2S3Constants.CONTENT_TYPE, "application/json");
        m.setHeader(AWS2S3Constants.CONTENT_LENGTH, (long) json.length);
        m.removeHeader(AWS2S3Constants.METADATA); // the output's record is the output's
    }

    /** Step mark-promoted: promoted; the quarantine object is deleted next. */
    public void promoted(Exchange exchange) {
        faults.accept("promoted");
        exchange.getMessage().setHeader(AWS2S3Constants.KEY, exchange.getProperty(QUARANTINED, Quarantined.class).key());
    }

    private static void decide(Exchange exchange, String verdict, StoreResult.Refused failure) {
        exchange.setProperty(VERDICT, verdict);
        if (failure != null) {
            exchange.setProperty(FAILURE, failure);
        }
    }

    private String record(Exchange exchange) {
        return promotedOutput(exchange).resultJson();
    }

    private static PromotedOutput promotedOutput(Exchange exchange) {
        Request r = exchange.getProperty(STORING, Request.class);
        Quarantined q = exchange.getProperty(QUARANTINED, Quarantined.class);
        Checked c = exchange.getProperty(CHECKED, Checked.class);
        return new PromotedOutput(c.outputKey(), c.manifestKey(), c.checked(), q.length(), c.sha256(), r.job().adapter(),
                r.job().revision(), r.job().attempt());
    }

    /**
     * Step quarantine of a video: from the provider (or the adapter's bytes) straight into its quarantine key
     * by multipart upload, its container read on the way ({@link Mp4Probe}); never whole in memory.
     */
    private void streamVideo(Exchange exchange, Request r, Preset preset) {
        String key = "quarantine/" + r.job().jobId() + "/" + r.job().attempt() + "/output-"
                + UUID.randomUUID().toString().substring(0, 8);
        MultipartUpload upload = null;
        try (InputStream in = open(r.result(), r.deadline())) {
            java.security.MessageDigest sha256 = java.security.MessageDigest.getInstance("SHA-256");
            upload = new MultipartUpload(s3, bucket, key, MediaTypes.MP4);
            Mp4Probe.Scan scan = Mp4Probe.copy(in, new java.security.DigestOutputStream(upload, sha256),
                    r.job().video() == null ? OutputSubject.Video.MAX_BYTES : r.job().video().maxBytes());
            upload.close();
            exchange.setProperty(QUARANTINED, new Quarantined(preset, PresetCatalog.aspect(preset, r.job().aspectClass()),
                    r.job().size(), null, key, false, new Streamed(scan, java.util.HexFormat.of().formatHex(sha256.digest()))));
            exchange.setProperty(IN_MEMORY, false);
            exchange.setProperty(STREAMED, true);
            exchange.getMessage().setBody(null);
        } catch (OutputUnavailable e) {
            abort(upload);
            decide(exchange, "unavailable", e.refused());
        } catch (Mp4Probe.TooLarge e) {
            abort(upload);
            decide(exchange, "unavailable", new StoreResult.Refused(ErrorCategory.INVALID_OUTPUT, e.getMessage()));
        } catch (IOException | software.amazon.awssdk.core.exception.SdkException e) {
            abort(upload);
            decide(exchange, "unavailable", new StoreResult.Refused(ErrorCategory.TRANSIENT,
                    "output download or quarantine upload failed: " + e.getClass().getSimpleName()));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void abort(MultipartUpload upload) {
        if (upload != null) {
            try {
                upload.abort();
            } catch (RuntimeException ignored) {
                // the bucket's lifecycle removes abandoned parts
            }
        }
    }

    /** The output as a stream: the URL's body, or the adapter's bytes (decoded, or base64 decoded here) or text. */
    private InputStream open(AdapterResult result, Duration deadline) throws OutputUnavailable {
        if (result.outputText() != null) {
            return new java.io.ByteArrayInputStream(result.outputText().getBytes(StandardCharsets.UTF_8));
        }
        if (result.outputBytes() != null) {
            try {
                return result.outputBytes().open();
            } catch (IOException e) {
                throw unreadable(e);
            }
        }
        if (result.outputBase64() != null) {
            try {
                return new java.io.ByteArrayInputStream(Base64.getMimeDecoder().decode(result.outputBase64()));
            } catch (IllegalArgumentException e) {
                throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output is not valid base64");
            }
        }
        try {
            HttpResponse<InputStream> reply = http.send(HttpRequest.newBuilder(URI.create(result.outputUrl())).timeout(deadline)
                    .GET().build(), HttpResponse.BodyHandlers.ofInputStream());
            if (reply.statusCode() / 100 != 2) {
                reply.body().close();
                throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download answered HTTP " + reply.statusCode());
            }
            return reply.body();
        } catch (IllegalArgumentException e) {
            throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output URL is not a URL");
        } catch (IOException e) {
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download failed: " + e.getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download interrupted");
        }
    }

    private byte[] bytes(AdapterResult result, Duration deadline) throws OutputUnavailable {
        byte[] bytes;
        if (result.outputText() != null) {
            bytes = result.outputText().getBytes(StandardCharsets.UTF_8);
        } else if (result.outputBytes() != null) {
            if (result.outputBytes().size() > maxBytes) {
                throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT,
                        "output of " + result.outputBytes().size() + " bytes exceeds " + maxBytes);
            }
            try {
                bytes = result.outputBytes().bytes();
            } catch (IOException e) {
                throw unreadable(e);
            }
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

    /** A decoded output that waited in a file (its answer beyond the memory budget) and cannot be read back. */
    private static OutputUnavailable unreadable(IOException e) {
        return new OutputUnavailable(ErrorCategory.TRANSIENT, "output waiting on disk could not be read: " + e.getClass().getSimpleName());
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
