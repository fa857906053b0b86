package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.api.ApiProblem;
import io.jobgate.api.Json;
import io.jobgate.preset.InputValidator;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.Pricing;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.Tenant;
import io.jobgate.upload.Upload;
import io.jobgate.upload.UploadStore;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The one admission service behind both doors (HTTP and JMS). It validates a request against its
 * preset, prices it, and writes the job, its outbox event and its ledger debit in ONE transaction
 * together with the capacity reservations. The unique (tenant, idempotency key) constraint decides
 * between concurrent requests with one key; the loser loads the winner.
 */
public final class AdmissionService {

    /**
     * One statement, one round trip: insert the job (or nothing on a key conflict), reserve the
     * tenant's open-job slot, queued bytes and budget, take a slot of the global in-flight window,
     * then debit the ledger and queue the outbox event. Each step only runs if the one before it
     * did; the caller commits only when every count is 1. The ledger trigger derives the balance.
     */
    private static final String ADMIT = """
            WITH new_job AS (
                INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version,
                                  kind, aspect_class, provider, inputs, upload_id, source_key, source_sha256, source_bytes,
                                  correlation_id, cost_micros, max_attempts, max_lifetime_seconds, expires_at,
                                  created_at, updated_at)
                VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
                RETURNING job_id, tenant_id, source_bytes, cost_micros, created_at),
            reserved AS (
                UPDATE tenant_accounts a
                   SET open_jobs = a.open_jobs + 1, queued_bytes = a.queued_bytes + j.source_bytes
                  FROM new_job j, tenants t
                 WHERE a.tenant_id = j.tenant_id AND t.tenant_id = j.tenant_id
                   AND a.open_jobs < t.max_open_jobs
                   AND a.queued_bytes + j.source_bytes <= t.max_queued_bytes
                   AND a.balance_micros >= j.cost_micros
                RETURNING a.tenant_id),
            admitted AS (
                UPDATE gateway_capacity SET in_flight = in_flight + 1
                 WHERE id = 1 AND in_flight < ? AND EXISTS (SELECT 1 FROM reserved)
                RETURNING id),
            debit AS (
                INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, created_at)
                SELECT j.tenant_id, j.job_id, 'debit', -j.cost_micros, j.created_at
                  FROM new_job j WHERE EXISTS (SELECT 1 FROM admitted)
                RETURNING entry_id),
            event AS (
                INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at)
                SELECT j.job_id, j.tenant_id, 'dispatch', j.created_at, j.created_at
                  FROM new_job j WHERE EXISTS (SELECT 1 FROM admitted)
                RETURNING event_id)
            SELECT (SELECT count(*) FROM new_job) AS inserted, (SELECT count(*) FROM reserved) AS reserved,
                   (SELECT count(*) FROM admitted) AS admitted, (SELECT count(*) FROM debit) AS debited,
                   (SELECT count(*) FROM event) AS queued""";

    private static final String ACCOUNT = """
            SELECT a.open_jobs, t.max_open_jobs, a.queued_bytes, t.max_queued_bytes, a.balance_micros
              FROM tenant_accounts a JOIN tenants t ON t.tenant_id = a.tenant_id WHERE a.tenant_id = ?""";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final Clock clock;
    private final PresetCatalog presets;
    private final ProviderCatalog providers;
    private final UploadStore uploads;
    private final JobStore jobs;
    private final AdmissionLimits limits;

    public AdmissionService(JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock, PresetCatalog presets,
                            ProviderCatalog providers, UploadStore uploads, JobStore jobs, AdmissionLimits limits) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
        this.presets = presets;
        this.providers = providers;
        this.uploads = uploads;
        this.jobs = jobs;
        this.limits = limits;
    }

    public record Admission(Job job, boolean replayed) {
    }

    public Admission admit(Tenant tenant, String idempotencyKey, String correlationId, JsonNode body) {
        IdempotencyKeys.check(idempotencyKey);
        JobRequest request = JobRequest.parse(body);
        Optional<Job> existing = jobs.findByKey(tenant.id(), idempotencyKey);
        if (existing.isPresent()) {
            return replay(existing.get(), request);
        }
        Preset preset = presets.resolve(request.presetId(), request.presetVersion());
        PresetCatalog.aspect(preset, request.aspectClass());
        InputValidator.validate(preset, request.inputs());
        Provider provider = providers.choose(request.provider(), preset);
        Upload source = source(tenant, preset, request);
        long cost = Pricing.costMicros(preset, provider, source);
        Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS); // what PostgreSQL stores
        Job job = new Job(JobIds.next(clock), tenant.id(), idempotencyKey, request.fingerprint(), JobStatus.QUEUED,
                preset.id(), preset.version(), preset.kind(), request.aspectClass(), provider.name(),
                source == null ? null : source.id(), source == null ? null : source.sha256(),
                source == null ? 0 : source.bytes(), correlationId, cost, limits.maxAttempts(),
                limits.maxLifetimeSeconds(), now.plusSeconds(limits.maxLifetimeSeconds()), 0, null, null, now, now, null);
        Outcome outcome = transactions.execute(tx -> {
            Outcome o = insert(job, request.inputs(), source);
            if (!o.complete()) {
                tx.setRollbackOnly();
            }
            return o;
        });
        if (outcome.complete()) {
            return new Admission(job, false);
        }
        if (outcome.inserted == 0) {
            // A concurrent request with the same key committed first: the constraint decided.
            Job winner = jobs.findByKey(tenant.id(), idempotencyKey)
                    .orElseThrow(() -> new IllegalStateException("idempotency conflict without a winner"));
            return replay(winner, request);
        }
        throw refusal(tenant, outcome, cost);
    }

    private Outcome insert(Job job, JsonNode inputs, Upload source) {
        Timestamp created = Timestamp.from(job.createdAt());
        return jdbc.queryForObject(ADMIT, (rs, row) -> new Outcome(rs.getInt("inserted"), rs.getInt("reserved"),
                        rs.getInt("admitted"), rs.getInt("debited"), rs.getInt("queued")),
                job.id(), job.tenantId(), job.idempotencyKey(), job.requestSha256(), job.presetId(), job.presetVersion(),
                job.kind(), job.aspectClass(), job.provider(), Json.write(inputs), job.uploadId(),
                source == null ? null : source.objectKey(), job.sourceSha256(), job.sourceBytes(), job.correlationId(),
                job.costMicros(), job.maxAttempts(), job.maxLifetimeSeconds(), Timestamp.from(job.expiresAt()),
                created, created, limits.maxInFlight());
    }

    private Admission replay(Job existing, JobRequest request) {
        if (!existing.requestSha256().equals(request.fingerprint())) {
            throw ApiProblem.of(422, "idempotency_key_reused", "This Idempotency-Key was used for a different request "
                    + "(job " + existing.id() + "); use a new key for a new request.").with("job_id", existing.id().toString());
        }
        return new Admission(existing, true);
    }

    private Upload source(Tenant tenant, Preset preset, JobRequest request) {
        if (request.uploadId() == null) {
            if (preset.sourceRequired()) {
                throw ApiProblem.invalidInput("upload_id", "Preset '" + preset.id() + "' needs a source upload ("
                        + String.join(", ", preset.sourceMediaTypes()) + "); send its upload_id.");
            }
            return null;
        }
        Upload upload = uploads.find(tenant.id(), request.uploadId())
                .orElseThrow(() -> ApiProblem.of(422, "unknown_upload", "No upload '" + request.uploadId() + "'.")
                        .with("field", "upload_id"));
        if (!preset.sourceMediaTypes().contains(upload.mediaType())) {
            throw ApiProblem.invalidInput("upload_id", "Preset '" + preset.id() + "' takes "
                    + (preset.takesSource() ? String.join(", ", preset.sourceMediaTypes()) : "no source upload")
                    + "; the upload is " + upload.mediaType() + ".");
        }
        return upload;
    }

    private ApiProblem refusal(Tenant tenant, Outcome outcome, long cost) {
        if (outcome.reserved == 1) {
            return ApiProblem.tooManyRequests("global_capacity", "The gateway has " + limits.maxInFlight()
                    + " jobs in flight, its limit; retry later.", limits.retryAfterSeconds());
        }
        Map<String, Object> a = jdbc.queryForMap(ACCOUNT, tenant.id());
        long open = ((Number) a.get("open_jobs")).longValue();
        long queuedBytes = ((Number) a.get("queued_bytes")).longValue();
        long balance = ((Number) a.get("balance_micros")).longValue();
        if (open >= ((Number) a.get("max_open_jobs")).longValue()) {
            return ApiProblem.tooManyRequests("tenant_concurrency", "Tenant '" + tenant.id() + "' has " + open
                    + " open jobs, its limit; retry when some finish.", limits.retryAfterSeconds());
        }
        if (balance < cost) {
            return ApiProblem.of(402, "budget_exhausted", "The job costs " + cost + " micro-units; the balance is "
                    + balance + ".").with("cost_micros", cost).with("balance_micros", balance);
        }
        return ApiProblem.tooManyRequests("queued_bytes", "Tenant '" + tenant.id() + "' has " + queuedBytes
                + " bytes of sources queued; this job would pass its limit.", limits.retryAfterSeconds());
    }

    /** Row counts of the admission statement; all 1 means every part of the job was written. */
    private record Outcome(int inserted, int reserved, int admitted, int debited, int queued) {
        boolean complete() {
            return inserted == 1 && reserved == 1 && admitted == 1 && debited == 1 && queued == 1;
        }
    }
}
