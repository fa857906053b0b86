package io.jobgate.summary;

import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.adapter.TranscriptText;
import io.jobgate.admission.AdmissionLimits;
import io.jobgate.admission.AdmissionPlacement;
import io.jobgate.admission.AdmissionWriter;
import io.jobgate.admission.IdempotencyKeys;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import io.jobgate.common.Json;
import io.jobgate.job.Job;
import io.jobgate.job.JobIds;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.Pricing;
import io.jobgate.provider.Provider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;

/**
 * Orders the summaries transcription jobs asked for, once their transcripts ended (route summary-orders, on
 * the relay's instances). A summary is a job of its own under the transcription job ({@code parent_job_id}):
 * its price is fixed now, from the transcript's length, and it goes through the one admission writer, so it
 * is debited, metered and held to the tenant's caps and budget like any job, and runs with its own attempts.
 *
 * <p>Crash-safe and at most once: a waiting summary is claimed for a while ({@code claimed_until}), and the
 * summary job's idempotency key is {@code jobgate:summary:<transcription job>} (a prefix clients may not use),
 * so a claim that ran out after its job was written finds that job and orders no second one. A refusal that
 * may pass (budget, the tenant's caps, the provider not running) is tried again every {@code retryEvery} for
 * the jobs' lifetime after the transcript; any other refusal, or one past that, ends as {@code refused} with
 * its code and message. A transcript that did not succeed leaves nothing to summarise ({@code skipped}).
 */
public final class SummaryOrders {

    private static final Logger LOG = LoggerFactory.getLogger(SummaryOrders.class);

    /** Waiting summaries of ended transcription jobs, claimed (at most a round's worth, none another holds). */
    static final String CLAIM = """
            UPDATE job_summaries s SET claimed_until = ?, tries = s.tries + 1
              FROM (SELECT w.job_id FROM job_summaries w JOIN jobs j ON j.job_id = w.job_id
                     WHERE w.state = 'waiting' AND j.finalized_at IS NOT NULL
                       AND (w.claimed_until IS NULL OR w.claimed_until < ?)
                     ORDER BY w.job_id LIMIT 32 FOR UPDATE OF w SKIP LOCKED) due
             WHERE s.job_id = due.job_id
            RETURNING s.job_id, s.tenant_id, s.preset_id, s.preset_version, s.provider, s.pool, s.inputs::text AS inputs""";

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final PresetCatalog presets;
    private final AdmissionPlacement placement;
    private final JobStore jobs;
    private final AdmissionWriter writer;
    private final AdmissionLimits limits;
    private final S3Client s3;
    private final String bucket;
    private final Duration claimFor;
    private final Duration retryEvery;
    private final java.util.function.BiFunction<String, String, String> whyNotAllowed;

    /**
     * @param whyNotAllowed per tenant and provider, why the tenant's rules of where its jobs run rule the provider out
     *                      (null: it may use it); the summary job is the tenant's job as much as its transcript
     */
    public SummaryOrders(JdbcTemplate jdbc, Clock clock, PresetCatalog presets, AdmissionPlacement placement, JobStore jobs,
                         AdmissionWriter writer, AdmissionLimits limits, S3Client s3, String bucket, Duration retryEvery,
                         java.util.function.BiFunction<String, String, String> whyNotAllowed) {
        this.whyNotAllowed = whyNotAllowed;
        this.jdbc = jdbc;
        this.clock = clock;
        this.presets = presets;
        this.placement = placement;
        this.jobs = jobs;
        this.writer = writer;
        this.limits = limits;
        this.s3 = s3;
        this.bucket = bucket;
        this.retryEvery = retryEvery;
        this.claimFor = Duration.ofSeconds(60);
    }

    /** The summary job's idempotency key: one per transcription job, never a client's. */
    public static String key(UUID transcriptionJob) {
        return IdempotencyKeys.RESERVED_PREFIX + "summary:" + transcriptionJob;
    }

    /** One round: every claimable waiting summary of an ended transcription job; @return how many it settled. */
    public int orderDue() {
        Instant now = clock.instant();
        List<Map<String, Object>> due = jdbc.queryForList(CLAIM, Timestamp.from(now.plus(claimFor)), Timestamp.from(now));
        int settled = 0;
        for (Map<String, Object> row : due) {
            try {
                if (order(row)) {
                    settled++;
                }
            } catch (RuntimeException e) {
                // Object storage or the database away: the claim runs out and a later round tries again.
                LOG.warn("summary of job {} not ordered this round: {}", row.get("job_id"), e.toString());
            }
        }
        return settled;
    }

    private boolean order(Map<String, Object> row) {
        UUID parentId = (UUID) row.get("job_id");
        String tenant = (String) row.get("tenant_id");
        Job parent = jobs.find(tenant, parentId).orElseThrow(() -> new IllegalStateException("no job " + parentId));
        if (parent.status() != JobStatus.SUCCEEDED) {
            end(parentId, "skipped", "transcript_" + parent.status().wire(),
                    "The transcript job ended " + parent.status().wire() + ": there is no transcript to summarise.");
            return true;
        }
        JsonNode result = Json.parseObject(parent.result().getBytes(StandardCharsets.UTF_8));
        String transcriptKey = result.path("output_key").asText();
        byte[] transcript;
        try {
            transcript = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(transcriptKey).build()).asByteArray();
        } catch (SdkException e) {
            throw new IllegalStateException("object storage: " + e.getClass().getSimpleName(), e);
        }
        String text = TranscriptText.of(transcript);
        if (text == null || text.isBlank()) {
            end(parentId, "refused", "empty_transcript", "The transcript has no text to summarise.");
            return true;
        }
        try {
            Preset preset = presets.resolve((String) row.get("preset_id"), ((Number) row.get("preset_version")).intValue());
            JsonNode inputs = Json.parseObject(((String) row.get("inputs")).getBytes(StandardCharsets.UTF_8));
            // The prompt is the preset's instruction and the transcript: both are billed as input tokens.
            long inputTokens = TranscriptText.estimatedTokens(text) + TranscriptText.estimatedTokens(preset.template().render(inputs));
            UUID summaryId = JobIds.next(clock);
            // Placed as a client's job is at admission: the provider named, the pool named (or the preset's or the kind's),
            // or the kind's default provider, within the tenant's rules; priced on each provider from the tokens.
            AdmissionPlacement.Placed placed = placement.place(tenant, p -> whyNotAllowed.apply(tenant, p), (String) row.get("provider"),
                    (String) row.get("pool"), preset, null, 0, summaryId, "summary.", p -> Pricing.summaryCostMicros(p, inputTokens));
            Provider provider = placed.provider();
            Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS);
            String key = key(parentId);
            Job summary = new Job(summaryId, tenant, key, Digests.sha256Hex(key), JobStatus.QUEUED, preset.id(),
                    preset.version(), preset.kind(), null, provider.name(), null, result.path("sha256").asText(),
                    result.path("bytes").asLong(), parent.correlationId(), placed.costMicros(),
                    limits.maxAttempts(), limits.maxLifetimeSeconds(), now.plusSeconds(limits.maxLifetimeSeconds()), 0, null, null,
                    now, now, null, null, null, null, parent.webhookEndpointId(), parentId, placed.pool(), placed.waitingReason());
            AdmissionWriter.Candidate candidate = new AdmissionWriter.Candidate(summary, Json.write(inputs), transcriptKey,
                    Pricing.summaryMetered(provider, inputTokens));
            UUID ordered = writer.admit(candidate) == AdmissionWriter.Result.ADMITTED ? summary.id()
                    : jobs.findByKey(tenant, key).orElseThrow(() -> new IllegalStateException("key " + key + " taken without a job")).id();
            jdbc.update("UPDATE job_summaries SET state = 'ordered', summary_job_id = ?, claimed_until = NULL, refused_code = NULL,"
                    + " refused_message = NULL, updated_at = ? WHERE job_id = ?", ordered, Timestamp.from(clock.instant()), parentId);
            LOG.info("summary of job {} ordered as job {} ({}{}, {} input tokens estimated)", parentId, ordered, provider.name(),
                    placed.pool() == null ? "" : " in pool " + placed.pool(), inputTokens);
            return true;
        } catch (ApiProblem refused) {
            boolean mayPass = refused.status() == 402 || refused.status() == 429 || refused.status() == 503
                    || "provider_not_running".equals(refused.code());
            Instant giveUpAt = parent.finalizedAt().plusSeconds(limits.maxLifetimeSeconds());
            if (mayPass && clock.instant().isBefore(giveUpAt)) {
                jdbc.update("UPDATE job_summaries SET claimed_until = ?, refused_code = ?, refused_message = ?, updated_at = ?"
                        + " WHERE job_id = ?", Timestamp.from(clock.instant().plus(retryEvery)), refused.code(), refused.getMessage(),
                        Timestamp.from(clock.instant()), parentId);
                LOG.info("summary of job {} refused for now ({}), tried again in {} s", parentId, refused.code(), retryEvery.toSeconds());
                return false;
            }
            end(parentId, "refused", refused.code(), refused.getMessage());
            return true;
        }
    }

    private void end(UUID parentId, String state, String code, String message) {
        jdbc.update("UPDATE job_summaries SET state = ?, refused_code = ?, refused_message = ?, claimed_until = NULL, updated_at = ?"
                + " WHERE job_id = ?", state, code, message, Timestamp.from(clock.instant()), parentId);
        LOG.info("summary of job {} {}: {}", parentId, state, code);
    }
}
