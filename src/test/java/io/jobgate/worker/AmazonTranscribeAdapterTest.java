package io.jobgate.worker;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.http.Request;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import io.jobgate.common.Digests;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.LogCapture;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Amazon Transcribe adapter (routes/providers/amazon-transcribe.camel.yaml, a drop-in off by default) through the
 * real worker and poller, against a stand-in of Transcribe's documented batch API (aws-sdk-js
 * transcribe-2017-10-26; API_StartTranscriptionJob, API_GetTranscriptionJob): AWS JSON 1.1 with X-Amz-Target and
 * SigV4 — the stand-in recomputes each request's signature with the test's secret —, job names unique per account
 * (ConflictException), QUEUED/IN_PROGRESS/COMPLETED, the transcript at a pre-signed TranscriptFileUri, and errors as
 * {@code __type}/{@code x-amzn-ErrorType}. Each job's behaviour is scripted by its audio's digest (the stand-in sees
 * the S3 URI of the gateway's upload, sources/sha256/&lt;digest&gt;).
 */
class AmazonTranscribeAdapterTest extends GatewayTestBase {

    static final String KEY_ID = "AKIDJOBGATETEST0001";
    static final String SECRET = "jobgate/test+Secret/0123456789abcdefABCDEF";
    static final String REGION = "eu-west-1";

    final Transcribe transcribe = new Transcribe();
    WireMockServer aws;

    @Override
    protected Map<String, String> settings() throws Exception {
        aws = fakeProvider(transcribe);
        aws.stubFor(any(anyUrl()).willReturn(aResponse().withTransformers(Transcribe.NAME)));
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.amazon-transcribe.enabled", "true",
                "jobgate.provider.amazon-transcribe.base-url", aws.baseUrl(),
                "jobgate.provider.amazon-transcribe.aws-region", REGION,
                "jobgate.provider.amazon-transcribe.aws-access-key-id", KEY_ID,
                "jobgate.provider.amazon-transcribe.aws-secret-access-key", SECRET,
                "jobgate.provider.amazon-transcribe.call-deadline-ms", "2000",
                // Without jitter a retry waits exactly its backoff ceiling (the base, for the first retry), so the wait a
                // rate-limited start was given can be read off the times the gateway recorded; a base longer than an
                // answered start takes keeps a retry scheduled too soon from hiding inside the attempt's own span.
                "jobgate.worker.backoff-base-ms", Long.toString(BACKOFF.toMillis()),
                "jobgate.worker.backoff-jitter", "false"));
    }

    /** The first retry's backoff in this class (jitter off: exactly this). */
    static final Duration BACKOFF = Duration.ofSeconds(5);

    @AfterEach
    void everyRequestWasSignedAndShapedAsTranscribeWants() {
        assertThat(transcribe.refused).as("requests the stand-in refused (signature, headers, shape)").isEmpty();
    }

    static final AtomicInteger UPLOADS = new AtomicInteger();

    record Submitted(UUID id, String digest) {
    }

    /** A call-transcript job naming amazon-transcribe, with audio of its own ({@code millis} long), scripted by {@code faults}. */
    Submitted transcribe(int millis, String language, Fault... faults) {
        byte[] audio = Samples.wav(millis + UPLOADS.incrementAndGet());
        String digest = Digests.sha256Hex(audio);
        transcribe.script(digest, faults);
        ApiClient.Response upload = api.upload(ACME, "audio/wav", audio);
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"amazon-transcribe\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"" + language + "\", \"speakers\": 2, \"glossary\": [{\"term\": \"Kubernetes\"}]}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return new Submitted(UUID.fromString(r.json().path("job_id").asText()), digest);
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts, provider_task FROM jobs WHERE job_id = ?", id);
    }

    static Map<String, Object> attempt(UUID id, int n) {
        return Db.single("SELECT outcome, error_category, error_message, http_status, retry_after, next_attempt_at, billed_units, "
                + "billed_unit, provider_request_id, adapter_revision FROM attempts WHERE job_id = ? AND attempt = ?", id, n);
    }

    /** When the gateway opened and closed an attempt, and when it made the job due again after it. */
    record AttemptTimes(Instant started, Instant ended, Instant nextAttemptAt) {
    }

    static AttemptTimes times(UUID id, int n) {
        Map<String, Object> row = Db.single("SELECT started_at, ended_at, next_attempt_at FROM attempts WHERE job_id = ? AND attempt = ?", id, n);
        return new AttemptTimes(instant(row.get("started_at")), instant(row.get("ended_at")), instant(row.get("next_attempt_at")));
    }

    static Instant instant(Object timestamp) {
        return timestamp == null ? null : ((java.sql.Timestamp) timestamp).toInstant();
    }

    @Test
    void startsAJobOnTheUploadInS3PollsItAndTheTranscriptIsTheOutputBilledPerSecondWithTheMinimum() throws Exception {
        Submitted shortCall;
        Submitted longCall;
        List<String> lines;
        try (LogCapture log = new LogCapture()) {
            shortCall = transcribe(3000, "de");
            longCall = transcribe(16_200, "nl");
            Jobs.awaitFinal(shortCall.id());
            Jobs.awaitFinal(longCall.id());
            lines = log.lines();
        }
        for (Submitted s : List.of(shortCall, longCall)) {
            assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "succeeded").containsEntry("attempts", 1)
                    .containsEntry("provider_task", "jobgate-" + s.id() + "-1");
            JsonNode output = Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + s.id() + "/output"));
            assertThat(output.path("jobName").asText()).isEqualTo("jobgate-" + s.id() + "-1");
            assertThat(output.path("results").path("transcripts").get(0).path("transcript").asText()).isEqualTo("Guten Tag, danke.");
            assertThat(transcribe.starts(s.digest())).hasSize(1);
            assertThat(transcribe.gets.get("jobgate-" + s.id() + "-1").get()).as("polled until COMPLETED").isGreaterThanOrEqualTo(2);
            assertThat(transcribe.transcriptFetches).contains("jobgate-" + s.id() + "-1");
        }
        JsonNode start = transcribe.starts(shortCall.digest()).get(0);
        assertThat(start.path("TranscriptionJobName").asText()).isEqualTo("jobgate-" + shortCall.id() + "-1");
        assertThat(start.path("Media").path("MediaFileUri").asText()).isEqualTo("s3://jobgate/sources/sha256/" + shortCall.digest());
        assertThat(start.path("MediaFormat").asText()).isEqualTo("wav");
        assertThat(start.path("LanguageCode").asText()).isEqualTo("de-DE");
        assertThat(start.has("IdentifyLanguage")).isFalse();

        Map<String, Object> first = attempt(shortCall.id(), 1);
        assertThat((java.math.BigDecimal) first.get("billed_units")).as("3 s of audio: the 15-second minimum")
                .isEqualByComparingTo("15");
        assertThat(first).containsEntry("billed_unit", "second");
        assertThat((String) first.get("adapter_revision")).matches("amazon-transcribe-batch-1@[0-9a-f]{10}");
        assertThat((java.math.BigDecimal) attempt(longCall.id(), 1).get("billed_units")).as("16.2 s: whole seconds, rounded up")
                .isEqualByComparingTo("17");
        assertThat(lines).as("the secret is never logged").noneMatch(l -> l.contains(SECRET));
    }

    @Test
    void throttlingAndTooManyRequestsAreRateLimitedAndRetriedAfterTheBackoff() {
        Submitted throttled = transcribe(2000, "en", Fault.THROTTLING);
        Submitted tooMany = transcribe(2000, "en", Fault.TOO_MANY_REQUESTS);
        Jobs.awaitFinal(throttled.id());
        Jobs.awaitFinal(tooMany.id());
        for (Submitted s : List.of(throttled, tooMany)) {
            assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            assertThat(attempt(s.id(), 1)).containsEntry("error_category", "rate_limited").containsEntry("outcome", "retry_wait");
            assertThat(transcribe.starts(s.digest())).extracting(n -> n.path("TranscriptionJobName").asText())
                    .containsExactly("jobgate-" + s.id() + "-1", "jobgate-" + s.id() + "-2");
        }
        assertThat((String) attempt(throttled.id(), 1).get("error_message")).contains("ThrottlingException");
        assertThat(attempt(tooMany.id(), 1)).containsEntry("http_status", 429);
        // Transcribe sends no Retry-After: the gateway waits its backoff (docs/providers.md). The retry's due time is
        // decided once the start's answer is in, so it is the backoff after a moment within the first attempt (between
        // its started_at and ended_at), and the second attempt did not start before it was due.
        for (Submitted s : List.of(throttled, tooMany)) {
            assertThat(attempt(s.id(), 1).get("retry_after")).as("no Retry-After came: the backoff applies").isNull();
            AttemptTimes first = times(s.id(), 1);
            assertThat(first.nextAttemptAt()).as("attempt 1 %s: its retry is due the backoff (%s) after the attempt", first, BACKOFF)
                    .isAfterOrEqualTo(first.started().plus(BACKOFF))
                    .isBeforeOrEqualTo(first.ended().plus(BACKOFF));
            assertThat(times(s.id(), 2).started()).as("attempt 2 starts once attempt 1's retry is due (%s)", first)
                    .isAfterOrEqualTo(first.nextAttemptAt());
        }
    }

    @Test
    void aBadRequestOrAnInputTooLongFailsAtOnceAndIsNeverRetried() {
        Submitted bad = transcribe(2000, "en", Fault.BAD_REQUEST);
        Submitted tooLong = transcribe(2000, "en", Fault.TOO_LONG);
        Jobs.awaitFinal(bad.id());
        Jobs.awaitFinal(tooLong.id());
        for (Submitted s : List.of(bad, tooLong)) {
            assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "failed")
                    .containsEntry("error_category", "terminal_request").containsEntry("attempts", 1);
            assertThat(transcribe.starts(s.digest())).hasSize(1);
        }
        assertThat((String) job(bad.id()).get("error_message")).contains("BadRequestException");
        assertThat((String) job(tooLong.id()).get("error_message")).contains("LimitExceededException").contains("too long");
    }

    @Test
    void anInternalFailureIsTransientAndTheNextAttemptIsANewJob() {
        Submitted s = transcribe(2000, "fr", Fault.INTERNAL);
        Jobs.awaitFinal(s.id());
        assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        assertThat(attempt(s.id(), 1)).containsEntry("error_category", "transient").containsEntry("http_status", 500);
        assertThat(transcribe.starts(s.digest())).hasSize(2);
    }

    /** The start reached Transcribe but its reply was lost: submission_unknown, found by its name, never started again. */
    @Test
    void aLostStartReplyIsFoundByTheJobsNameAndNotStartedAgain() {
        Submitted s = transcribe(2000, "es", Fault.LOSE_REPLY);
        Jobs.awaitFinal(s.id());
        assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "succeeded").containsEntry("attempts", 1)
                .containsEntry("provider_task", "jobgate-" + s.id() + "-1");
        assertThat(attempt(s.id(), 1).get("error_category")).isEqualTo("ambiguous");
        assertThat((java.math.BigDecimal) attempt(s.id(), 1).get("billed_units"))
                .as("billed from the upload's length, though the start's reply (and the task state) was lost").isEqualByComparingTo("15");
        assertThat(attempt(s.id(), 1)).containsEntry("billed_unit", "second");
        assertThat(transcribe.starts(s.digest())).as("one start only").hasSize(1);
        assertThat(transcribe.gets.get("jobgate-" + s.id() + "-1").get()).isGreaterThanOrEqualTo(1);
    }

    /** A start whose name is taken (ConflictException) was submitted before: the job is read by name, not failed. */
    @Test
    void aConflictOnStartMeansAlreadySubmittedAndTheJobIsReadByName() {
        Submitted s = transcribe(2000, "it", Fault.CONFLICT);
        Jobs.awaitFinal(s.id());
        assertThat(job(s.id())).as("%s", job(s.id())).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        assertThat(transcribe.starts(s.digest())).hasSize(1);
    }

    enum Fault {
        THROTTLING, TOO_MANY_REQUESTS, BAD_REQUEST, TOO_LONG, INTERNAL, LOSE_REPLY, CONFLICT
    }

    /**
     * The stand-in: Transcribe's StartTranscriptionJob and GetTranscriptionJob with their documented shapes, a job
     * IN_PROGRESS on its first Get and COMPLETED after, its transcript behind a pre-signed link; each request's SigV4
     * signature recomputed with the test's secret.
     */
    static final class Transcribe implements ResponseDefinitionTransformerV2 {
        static final String NAME = "amazon-transcribe-stand-in";
        static final Pattern AUTHORIZATION = Pattern.compile("AWS4-HMAC-SHA256 Credential=([^/]+)/(\\d{8})/([a-z0-9-]+)/transcribe/aws4_request, "
                + "SignedHeaders=([a-z0-9-]+(?:;[a-z0-9-]+)*), Signature=([0-9a-f]{64})");
        static final Pattern NAME_RULE = Pattern.compile("[0-9a-zA-Z._-]{1,200}");

        final List<String> refused = new CopyOnWriteArrayList<>();
        final Map<String, Deque<Fault>> faults = new ConcurrentHashMap<>();
        final Map<String, List<JsonNode>> startsByDigest = new ConcurrentHashMap<>();
        final Map<String, JsonNode> jobs = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> gets = new ConcurrentHashMap<>();
        final List<String> transcriptFetches = new CopyOnWriteArrayList<>();

        void script(String digest, Fault... scripted) {
            faults.put(digest, new ConcurrentLinkedDeque<>(List.of(scripted)));
        }

        List<JsonNode> starts(String digest) {
            return startsByDigest.getOrDefault(digest, List.of());
        }

        @Override
        public String getName() {
            return NAME;
        }

        @Override
        public boolean applyGlobally() {
            return false;
        }

        @Override
        public ResponseDefinition transform(ServeEvent event) {
            Request request = event.getRequest();
            String absolute = request.getAbsoluteUrl();
            String base = absolute.substring(0, absolute.indexOf('/', absolute.indexOf("//") + 2));
            if (request.getUrl().startsWith("/transcripts/")) {
                return transcript(request);
            }
            String why = checkSignedJsonCall(request);
            if (why != null) {
                refused.add(why);
                return error(403, "InvalidSignatureException", why);
            }
            JsonNode body;
            try {
                body = Json.MAPPER.readTree(request.getBodyAsString());
            } catch (Exception e) {
                return error(400, "SerializationException", "body is not JSON");
            }
            String name = body.path("TranscriptionJobName").asText("");
            if (!NAME_RULE.matcher(name).matches()) {
                refused.add("job name " + name);
                return error(400, "BadRequestException", "1 validation error detected: Value at 'transcriptionJobName' failed "
                        + "to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z._-]+");
            }
            return switch (request.getHeader("X-Amz-Target")) {
                case "Transcribe.StartTranscriptionJob" -> start(name, body);
                case "Transcribe.GetTranscriptionJob" -> get(base, name);
                default -> error(400, "UnknownOperationException", "unknown target");
            };
        }

        ResponseDefinition start(String name, JsonNode body) {
            String uri = body.path("Media").path("MediaFileUri").asText("");
            Matcher media = Pattern.compile("s3://jobgate/sources/sha256/([0-9a-f]{64})").matcher(uri);
            boolean language = body.has("LanguageCode") ^ body.path("IdentifyLanguage").asBoolean(false);
            if (!media.matches() || !List.of("mp3", "mp4", "wav", "flac", "ogg", "amr", "webm", "m4a").contains(body.path("MediaFormat").asText())
                    || !language) {
                refused.add("start " + body);
                return error(400, "BadRequestException", "The request is not valid: " + body);
            }
            String digest = media.group(1);
            startsByDigest.computeIfAbsent(digest, d -> new CopyOnWriteArrayList<>()).add(body);
            if (jobs.containsKey(name)) {
                return error(400, "ConflictException", "The requested job name already exists. Use a different job name.");
            }
            Fault fault = faults.getOrDefault(digest, new ConcurrentLinkedDeque<>()).poll();
            if (fault != null) {
                switch (fault) {
                    case THROTTLING:
                        return error(400, "ThrottlingException", "Rate exceeded");
                    case TOO_MANY_REQUESTS:
                        return error(429, "LimitExceededException", "You have sent too many requests in a given amount of time. "
                                + "Wait and try again.");
                    case BAD_REQUEST:
                        return error(400, "BadRequestException", "The data in your input media file isn't valid. Check the media "
                                + "file and try your request again.");
                    case TOO_LONG:
                        return error(400, "LimitExceededException", "Your audio file is too long. The maximum length is 4 hours.");
                    case INTERNAL:
                        return error(500, "InternalFailureException", "We can't process the request because of a server error. "
                                + "Try your request again.");
                    case LOSE_REPLY:
                        jobs.put(name, job(name, body));
                        return ResponseDefinitionBuilder.responseDefinition()
                                .withFault(com.github.tomakehurst.wiremock.http.Fault.CONNECTION_RESET_BY_PEER).build();
                    case CONFLICT:
                        jobs.put(name, job(name, body)); // as if an earlier start of the same name had gone through
                        return error(400, "ConflictException", "The requested job name already exists. Use a different job name.");
                    default:
                        break;
                }
            }
            jobs.put(name, job(name, body));
            return ok("{\"TranscriptionJob\": {\"TranscriptionJobName\": \"" + name + "\", \"TranscriptionJobStatus\": \"QUEUED\", "
                    + "\"LanguageCode\": \"" + body.path("LanguageCode").asText("") + "\", \"MediaFormat\": \"wav\", "
                    + "\"Media\": {\"MediaFileUri\": \"" + body.path("Media").path("MediaFileUri").asText() + "\"}, "
                    + "\"CreationTime\": 1.7648604E9}}");
        }

        static JsonNode job(String name, JsonNode body) {
            return body;
        }

        ResponseDefinition get(String base, String name) {
            if (!jobs.containsKey(name)) {
                return error(400, "BadRequestException", "The requested job couldn't be found. Check the job name and try again.");
            }
            int n = gets.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
            String media = jobs.get(name).path("Media").toString();
            if (n == 1) {
                return ok("{\"TranscriptionJob\": {\"TranscriptionJobName\": \"" + name + "\", \"TranscriptionJobStatus\": \"IN_PROGRESS\", "
                        + "\"MediaFormat\": \"wav\", \"Media\": " + media + ", \"StartTime\": 1.7648604E9}}");
            }
            String link = base + "/transcripts/" + name + ".json?X-Amz-Security-Token=IQoJb3JpZ2luX2VjE%2Fabc%3D"
                    + "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261204T102000Z&X-Amz-SignedHeaders=host&X-Amz-Expires=900"
                    + "&X-Amz-Credential=ASIAEXAMPLE%2F20261204%2F" + REGION + "%2Fs3%2Faws4_request"
                    + "&X-Amz-Signature=0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
            return ok("{\"TranscriptionJob\": {\"TranscriptionJobName\": \"" + name + "\", \"TranscriptionJobStatus\": \"COMPLETED\", "
                    + "\"LanguageCode\": \"de-DE\", \"MediaSampleRateHertz\": 8000, \"MediaFormat\": \"wav\", \"Media\": " + media + ", "
                    + "\"Transcript\": {\"TranscriptFileUri\": \"" + link + "\"}, \"StartTime\": 1.7648604E9, \"CompletionTime\": 1.7648605E9}}");
        }

        ResponseDefinition transcript(Request request) {
            String name = request.getUrl().substring("/transcripts/".length(), request.getUrl().indexOf(".json"));
            if (request.containsHeader("Authorization")) {
                refused.add("a pre-signed link fetched with an Authorization header");
                return ResponseDefinitionBuilder.responseDefinition().withStatus(400).withBody("<Error><Code>InvalidArgument</Code>"
                        + "<Message>Only one auth mechanism allowed</Message></Error>").build();
            }
            if (!"0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9".equals(request.queryParameter("X-Amz-Signature").firstValue())
                    || !("ASIAEXAMPLE/20261204/" + REGION + "/s3/aws4_request").equals(request.queryParameter("X-Amz-Credential").firstValue())
                    || !"IQoJb3JpZ2luX2VjE/abc=".equals(request.queryParameter("X-Amz-Security-Token").firstValue())) {
                refused.add("pre-signed link changed on the way: " + request.getUrl());
                return ResponseDefinitionBuilder.responseDefinition().withStatus(403).withBody("<Error><Code>SignatureDoesNotMatch</Code></Error>").build();
            }
            transcriptFetches.add(name);
            return ResponseDefinitionBuilder.responseDefinition().withStatus(200).withHeader("Content-Type", "application/json")
                    .withBody("{\"jobName\": \"" + name + "\", \"accountId\": \"123456789012\", \"status\": \"COMPLETED\", \"results\": "
                            + "{\"transcripts\": [{\"transcript\": \"Guten Tag, danke.\"}], \"items\": [{\"start_time\": \"0.1\", "
                            + "\"end_time\": \"0.6\", \"alternatives\": [{\"confidence\": \"0.99\", \"content\": \"Guten\"}], "
                            + "\"type\": \"pronunciation\"}]}}").build();
        }

        /** Why the request is not a SigV4-signed AWS JSON 1.1 call of this test's credentials, or null. */
        String checkSignedJsonCall(Request request) {
            if (!"POST".equals(request.getMethod().getName()) || !request.getUrl().equals("/")) {
                return "not POST /: " + request.getMethod() + " " + request.getUrl();
            }
            String target = request.getHeader("X-Amz-Target");
            if (target == null || !target.startsWith("Transcribe.")) {
                return "X-Amz-Target " + target;
            }
            if (!"application/x-amz-json-1.1".equals(request.getHeader("Content-Type"))) {
                return "Content-Type " + request.getHeader("Content-Type");
            }
            String authorization = request.getHeader("Authorization");
            Matcher m = AUTHORIZATION.matcher(authorization == null ? "" : authorization);
            if (!m.matches()) {
                return "Authorization " + authorization;
            }
            String date = request.getHeader("X-Amz-Date");
            if (!m.group(1).equals(KEY_ID) || !m.group(3).equals(REGION) || date == null || !date.startsWith(m.group(2))) {
                return "credential scope " + m.group(1) + "/" + m.group(2) + "/" + m.group(3) + " at " + date;
            }
            List<String> signed = List.of(m.group(4).split(";"));
            if (!signed.containsAll(List.of("host", "x-amz-date", "x-amz-target", "content-type"))) {
                return "SignedHeaders " + m.group(4);
            }
            // The signature, recomputed (SigV4: canonical request, string to sign, the derived key).
            StringBuilder canonical = new StringBuilder("POST\n/\n\n");
            for (String header : signed) {
                canonical.append(header).append(':').append(request.getHeader(header).trim()).append('\n');
            }
            canonical.append('\n').append(m.group(4)).append('\n').append(hex(sha256(request.getBody())));
            String scope = m.group(2) + "/" + REGION + "/transcribe/aws4_request";
            String toSign = "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n"
                    + hex(sha256(canonical.toString().getBytes(StandardCharsets.UTF_8)));
            byte[] key = hmac(("AWS4" + SECRET).getBytes(StandardCharsets.UTF_8), m.group(2));
            key = hmac(key, REGION);
            key = hmac(key, "transcribe");
            key = hmac(key, "aws4_request");
            String expected = hex(hmac(key, toSign));
            return expected.equals(m.group(5)) ? null : "signature does not match (canonical request:\n" + canonical + ")";
        }

        static ResponseDefinition ok(String json) {
            return ResponseDefinitionBuilder.responseDefinition().withStatus(200).withHeader("Content-Type", "application/x-amz-json-1.1")
                    .withHeader("x-amzn-RequestId", UUID.randomUUID().toString()).withBody(json).build();
        }

        static ResponseDefinition error(int status, String type, String message) {
            return ResponseDefinitionBuilder.responseDefinition().withStatus(status).withHeader("Content-Type", "application/x-amz-json-1.1")
                    .withHeader("x-amzn-RequestId", UUID.randomUUID().toString())
                    .withHeader("x-amzn-ErrorType", type + ":http://internal.amazon.com/coral/com.amazonaws.transcribe/")
                    .withBody("{\"__type\": \"com.amazonaws.transcribe#" + type + "\", \"message\": " + Json.write(message) + "}").build();
        }

        static byte[] sha256(byte[] bytes) {
            try {
                return MessageDigest.getInstance("SHA-256").digest(bytes);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        static byte[] hmac(byte[] key, String data) {
            try {
                Mac mac = Mac.getInstance("HmacSHA256");
                mac.init(new SecretKeySpec(key, "HmacSHA256"));
                return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        static String hex(byte[] bytes) {
            StringBuilder s = new StringBuilder();
            for (byte b : bytes) {
                s.append(String.format(Locale.ROOT, "%02x", b));
            }
            return s.toString();
        }
    }
}
