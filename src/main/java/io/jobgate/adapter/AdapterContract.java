package io.jobgate.adapter;

/**
 * The stable contract between the worker and a provider adapter route ({@code direct:provider-<name>},
 * one YAML file per provider in routes/providers). Documented in docs/providers.md ("Provider adapters (the contract)"); keep it stable.
 *
 * <p>The adapter gets a fresh message ({@link #request}): the body is the portable envelope (JSON
 * text), no headers, and the fields below are exchange properties. Properties, unlike headers, are never sent
 * to the provider by camel-http. The adapter answers by setting the outcome properties; an adapter
 * that sets no outcome is classified by the provider's HTTP status ({@code CamelHttpResponseCode}),
 * and the wait ({@code retry-after-ms}, else {@code Retry-After}) and a request id header
 * ({@code x-request-id}, {@code request-id}) are read from the reply's headers when the adapter names none.
 */
public final class AdapterContract {

    private AdapterContract() {
    }

    /**
     * The key a job's submits carry and a lookup asks by: the job id, the same for every attempt, so
     * a provider that deduplicates sees one request, and a lost submit reply can be found again.
     */
    public static String idempotencyKey(java.util.UUID jobId) {
        return jobId.toString();
    }

    /**
     * Makes {@code exchange} an adapter request: {@code body} as the message, no headers (a
     * transport header would go out to the provider as an HTTP header), the contract's properties.
     */
    public static void request(org.apache.camel.Exchange exchange, io.jobgate.provider.Provider provider, String operation,
                               Object body, java.util.Map<String, Object> properties) {
        // A fresh message, not the one that came in with its headers removed: the enrich that calls the
        // adapter copies the exchange, and a JMS message's copy (camel-jms 4.18) throws and catches a
        // NullPointerException for its redelivery flag on every copy (5 % of a drain's CPU).
        org.apache.camel.Message m = new org.apache.camel.support.DefaultMessage(exchange);
        m.setBody(body);
        exchange.setMessage(m);
        properties.forEach((key, value) -> {
            if (value != null) {
                exchange.setProperty(key, value);
            }
        });
        exchange.setProperty(OPERATION, operation);
        exchange.setProperty(PROVIDER, provider.name());
        exchange.setProperty(DEADLINE_MILLIS, provider.callDeadline().toMillis());
        exchange.setProperty(ADAPTER_REVISION, provider.revision((String) properties.get(KIND)));
    }

    // --- Given to the adapter (exchange properties) ----------------------------------------------
    /**
     * What to do: {@code submit} (body: the envelope), {@code lookup} (ask for the task by
     * {@code JobgateProviderTask} or, without one, by {@code JobgateIdempotencyKey}), or
     * {@code webhook} (body: the raw webhook payload, signature already verified). An adapter serves
     * lookup and webhook only when its settings list them in {@code operations}.
     */
    public static final String OPERATION = "JobgateOperation";
    public static final String SUBMIT = "submit";
    public static final String LOOKUP = "lookup";
    public static final String WEBHOOK = "webhook";
    /**
     * Ask the provider to stop the task {@code JobgateProviderTask} of a job its tenant cancelled (adapters
     * listing {@code cancel} in {@code operations}); the adapter answers outcome {@code cancelled} when the
     * provider took note (or had nothing left to stop).
     */
    public static final String CANCEL = "cancel";
    /** The provider's name: its error table classifies a reply the adapter set no outcome for. */
    public static final String PROVIDER = "JobgateProvider";
    public static final String JOB_ID = "JobgateJobId";
    public static final String ATTEMPT = "JobgateAttempt";
    /** Stable for every attempt of one job ({@link #idempotencyKey}): send it as the provider's idempotency key. */
    public static final String IDEMPOTENCY_KEY = "JobgateIdempotencyKey";
    public static final String PRESET_ID = "JobgatePresetId";
    public static final String PRESET_VERSION = "JobgatePresetVersion";
    /** {@code image}, {@code transcription} or {@code video}. */
    public static final String KIND = "JobgateKind";
    public static final String ASPECT_CLASS = "JobgateAspectClass";
    public static final String WIDTH = "JobgateWidth";
    public static final String HEIGHT = "JobgateHeight";
    /** Video: the ordered whole seconds and resolution class ({@code 720p}, {@code 1080p}); WIDTH and HEIGHT are its frame. */
    public static final String DURATION_SECONDS = "JobgateDurationSeconds";
    public static final String RESOLUTION = "JobgateResolution";
    /** The rendered prompt, raw (for form fields) and as a quoted JSON string literal (for JSON bodies). */
    public static final String PROMPT = "JobgatePrompt";
    public static final String PROMPT_JSON = "JobgatePromptJson";
    /**
     * Transcription: the audio's language (ISO-639-1) from the job's inputs, and a short vocabulary
     * hint (whole terms, capped by the preset) for a provider's prompt field; each absent when the
     * job has none. Never the instruction template.
     */
    public static final String LANGUAGE = "JobgateLanguage";
    public static final String VOCABULARY_HINT = "JobgateVocabularyHint";
    /** The source upload's bytes (byte[]), its media type and a file name with a matching extension. */
    public static final String SOURCE = "JobgateSource";
    public static final String SOURCE_MEDIA_TYPE = "JobgateSourceMediaType";
    public static final String SOURCE_FILE_NAME = "JobgateSourceFileName";
    /**
     * Where the source upload is stored: the gateway's bucket and the object's key ({@code sources/sha256/<digest>}),
     * for a provider that reads its input from S3 itself (Amazon Transcribe's {@code s3://bucket/key}).
     */
    public static final String SOURCE_BUCKET = "JobgateSourceBucket";
    public static final String SOURCE_KEY = "JobgateSourceKey";
    /** The source audio's length in seconds (a decimal, as measured at upload), absent when it is no audio or unreadable. */
    public static final String SOURCE_SECONDS = "JobgateSourceSeconds";
    /** Milliseconds the call may take; configure the HTTP endpoint's timeouts from the same setting. */
    public static final String DEADLINE_MILLIS = "JobgateDeadlineMillis";
    public static final String ADAPTER_REVISION = "JobgateAdapterRevision";
    /**
     * The tenant's correlation id of the job (X-Correlation-Id), if any. Adapters of real providers
     * keep it to themselves; the simulator reads fault knobs from it ({@code sim-fault-<knob>-…}).
     */
    public static final String CORRELATION_ID = "JobgateCorrelationId";
    /** Where the provider should send its webhook for this job (async providers). */
    public static final String WEBHOOK_URL = "JobgateWebhookUrl";

    // --- Set by the adapter (exchange properties) ------------------------------------------------
    /** {@code succeeded}, {@code pending}, or an error category such as {@code declined}. */
    public static final String OUTCOME = "JobgateOutcome";
    public static final String HTTP_STATUS = "JobgateHttpStatus";
    /**
     * The provider's Retry-After value as sent (delta-seconds or an HTTP-date), or milliseconds as
     * {@code <n>ms} ({@link RetryAfter#fromReply}: what a {@code retry-after-ms} header said).
     */
    public static final String RETRY_AFTER = "JobgateRetryAfter";
    public static final String PROVIDER_REQUEST_ID = "JobgateProviderRequestId";
    /** The provider's task reference: set with {@code pending}, given to lookups, found in webhooks. */
    public static final String PROVIDER_TASK = "JobgateProviderTask";
    /**
     * The adapter's own record of its task (text it chooses, at most {@value #MAX_PROVIDER_STATE} characters):
     * set with {@code pending} (or by a lookup that finds the task of a lost submit reply), kept with the job's
     * task reference ({@code jobs.provider_state}), and given back to the lookups and cancels of that task, and to
     * a webhook whose URL names its job. fal keeps the status, result and cancel URLs of its submit reply and the
     * ordered seconds there.
     */
    public static final String PROVIDER_STATE = "JobgateProviderState";
    public static final int MAX_PROVIDER_STATE = 4096;
    /**
     * With outcome {@code succeeded}, one of: a URL to fetch, base64 bytes, the bytes already decoded (a
     * {@code byte[]}, or {@link OutputBytes} as {@link JsonParts#decoded} streams a reply's base64 into them: the way
     * for megabytes of image), or text (transcripts).
     */
    public static final String OUTPUT_URL = "JobgateOutputUrl";
    public static final String OUTPUT_BASE64 = "JobgateOutputBase64";
    public static final String OUTPUT_BYTES = "JobgateOutputBytes";
    public static final String OUTPUT_TEXT = "JobgateOutputText";
    /** The output's media type; when unset, the preset's expected media type. */
    public static final String OUTPUT_MEDIA_TYPE = "JobgateOutputMediaType";
    /** A short, operator-facing reason for an error outcome (never user text). */
    public static final String ERROR_MESSAGE = "JobgateErrorMessage";
    /** What the provider billed for this call, when it says: a number and its unit (e.g. 37.5 and {@code audio_seconds}). */
    public static final String BILLED_UNITS = "JobgateBilledUnits";
    public static final String BILLED_UNIT = "JobgateBilledUnit";

    public static final String SUCCEEDED = "succeeded";
    public static final String PENDING = "pending";
    /** Lookup only: the provider confirms it never received the request (a resubmit is safe). */
    public static final String ABSENT = "absent";
    /**
     * Webhook only: the task is done but the delivery does not carry its result (fal's {@code payload: null}
     * with {@code payload_error}): the gateway asks the adapter's lookup for it at once instead of waiting for
     * the poller.
     */
    public static final String FETCH = "fetch";
}
