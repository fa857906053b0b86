package io.jobgate.job;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/** Reads of jobs, always scoped to a tenant. */
public final class JobStore {

    /** The columns {@link #map} reads: never the inputs (they may hold user text), a lease or the provider's own state. */
    public static final String COLUMNS = """
            job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version, kind, aspect_class,
            provider, upload_id, source_sha256, source_bytes, correlation_id, cost_micros, max_attempts,
            max_lifetime_seconds, expires_at, attempts, error_category, error_message, created_at, updated_at, finalized_at,
            next_attempt_at, adapter_revision, result::text AS result, webhook_endpoint_id, parent_job_id, pool, waiting_reason""";

    private final JdbcTemplate jdbc;

    public JobStore(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public Optional<Job> find(String tenantId, UUID jobId) {
        return jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE tenant_id = ? AND job_id = ?", JobStore::map,
                tenantId, jobId).stream().findFirst();
    }

    /**
     * This tenant's jobs among {@code jobIds}, by id, in one statement (primary-key lookups); ids of other
     * tenants' jobs or of none are absent. For a page that shows other jobs beside its own (summaries).
     */
    public java.util.Map<UUID, Job> findAll(String tenantId, java.util.Collection<UUID> jobIds) {
        return byId(jobIds.isEmpty() ? List.of() : jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE job_id = ANY (?) AND tenant_id = ?",
                JobStore::map, jobIds.toArray(UUID[]::new), tenantId));
    }

    /** Any tenant's jobs among {@code jobIds}, by id, in one statement (the relay's status round, DeliveryFanOut). */
    public java.util.Map<UUID, Job> findAllAny(java.util.Collection<UUID> jobIds) {
        // (Object): the array is the one parameter, not the varargs list itself.
        return byId(jobIds.isEmpty() ? List.of() : jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE job_id = ANY (?)",
                JobStore::map, (Object) jobIds.toArray(UUID[]::new)));
    }

    private static java.util.Map<UUID, Job> byId(List<Job> found) {
        java.util.Map<UUID, Job> byId = new java.util.HashMap<>();
        found.forEach(job -> byId.put(job.id(), job));
        return byId;
    }

    /** The result record of a job (JSON), once it has one. */
    public Optional<String> result(UUID jobId) {
        return jdbc.query("SELECT result::text FROM jobs WHERE job_id = ? AND result IS NOT NULL", (rs, i) -> rs.getString(1),
                jobId).stream().findFirst();
    }

    /** One attempt of a job as its row keeps it (the API's view: {@link JobView#attempt}). */
    public record Attempt(int attempt, String adapter, String revision, String worker, Instant startedAt, Instant endedAt,
                          Long durationMs, String outcome, String errorCategory, String errorMessage, Integer httpStatus,
                          String providerRequestId, String retryAfter, Instant nextAttemptAt, java.math.BigDecimal billedUnits,
                          String billedUnit, String replyHead) {
    }

    /** Every attempt of a job, oldest first. */
    public List<Attempt> attempts(UUID jobId) {
        return jdbc.query("""
                SELECT attempt, adapter, adapter_revision, worker, started_at, ended_at, duration_ms, outcome, error_category,
                       error_message, http_status, provider_request_id, retry_after, next_attempt_at, billed_units, billed_unit,
                       response_excerpt
                  FROM attempts WHERE job_id = ? ORDER BY attempt""", (rs, i) -> new Attempt(rs.getInt("attempt"),
                rs.getString("adapter"), rs.getString("adapter_revision"), rs.getString("worker"), instant(rs.getTimestamp("started_at")),
                instant(rs.getTimestamp("ended_at")), rs.getObject("duration_ms", Long.class), rs.getString("outcome"),
                rs.getString("error_category"), rs.getString("error_message"), rs.getObject("http_status", Integer.class),
                rs.getString("provider_request_id"), rs.getString("retry_after"), instant(rs.getTimestamp("next_attempt_at")),
                rs.getBigDecimal("billed_units"), rs.getString("billed_unit"), rs.getString("response_excerpt")), jobId);
    }

    private static Instant instant(Timestamp ts) {
        return ts == null ? null : ts.toInstant();
    }

    private static final String TERMINAL = JobStatus.sqlList(JobStatus.TERMINAL);

    /**
     * Which of these jobs are done now (terminal, and a summary each asked for too), in one statement whatever
     * their number (reads waiting for their job to end, {@code GET /v1/jobs/{id}?wait=N}): primary-key lookups, no tenant needed
     * (each waiting read checked its job's tenant before it waited).
     */
    public List<UUID> terminalAmong(java.util.Collection<UUID> jobIds) {
        if (jobIds.isEmpty()) {
            return List.of();
        }
        StringBuilder ids = new StringBuilder(jobIds.size() * 37);
        for (UUID id : jobIds) {
            ids.append(ids.isEmpty() ? "" : ",").append(id);
        }
        // A transcription job that asked for a summary is done when its summary is (V34): ordered and ended, or
        // never to be (skipped, refused).
        return jdbc.query("SELECT job_id FROM jobs j WHERE job_id = ANY (string_to_array(?, ',')::uuid[])"
                + " AND status = ANY (string_to_array(?, ','))"
                + " AND NOT EXISTS (SELECT 1 FROM job_summaries s LEFT JOIN jobs c ON c.job_id = s.summary_job_id"
                + " WHERE s.job_id = j.job_id AND (s.state = 'waiting' OR (s.state = 'ordered' AND c.finalized_at IS NULL)))",
                (rs, i) -> rs.getObject(1, UUID.class), ids.toString(), TERMINAL);
    }

    /**
     * The lookups its provider was asked about the job (the poller's, counted as it claims them; V4) and when the next
     * is due, while it waits on its provider: {@code checks}, {@code next_check_at} (null when none is due).
     */
    public Map<String, Object> lookups(UUID jobId) {
        return jdbc.query("SELECT checks, next_check_at FROM jobs WHERE job_id = ?", (rs, i) -> {
            Map<String, Object> v = new java.util.LinkedHashMap<>();
            v.put("lookups", rs.getInt("checks"));
            java.sql.Timestamp next = rs.getTimestamp("next_check_at");
            v.put("next_lookup_at", next == null ? null : next.toInstant().toString());
            return v;
        }, jobId).stream().findFirst().orElse(Map.of());
    }

    /** Each attempt's revision role ({@code stable}, {@code candidate}; V35), by attempt number (operator endpoints only). */
    public Map<Integer, String> revisionRoles(UUID jobId) {
        Map<Integer, String> roles = new java.util.TreeMap<>();
        jdbc.query("SELECT attempt, revision_role FROM attempts WHERE job_id = ?", rs -> {
            roles.put(rs.getInt("attempt"), rs.getString("revision_role"));
        }, jobId);
        return roles;
    }

    /** The summary job a transcription job ordered (docs/summaries.md), if it has one (operator endpoints only). */
    public Optional<Job> summaryOf(UUID transcriptionJobId) {
        return jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE parent_job_id = ?", JobStore::map, transcriptionJobId).stream().findFirst();
    }

    /** Any tenant's job (operator endpoints only). */
    public Optional<Job> findAny(UUID jobId) {
        return jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE job_id = ?", JobStore::map, jobId).stream().findFirst();
    }

    public Optional<Job> findByKey(String tenantId, String idempotencyKey) {
        return jdbc.query("SELECT " + COLUMNS + " FROM jobs WHERE tenant_id = ? AND idempotency_key = ?", JobStore::map,
                tenantId, idempotencyKey).stream().findFirst();
    }

    /**
     * Newest first; {@code before} is the last job id of the previous page (ids are time-ordered).
     * The page's ids come first from a tenant index alone, then their rows by key: asked directly, a
     * generic plan walks the primary key backwards and filters by tenant, reading every newer job of
     * the other tenants (a cost that grows with history, worst for a large tenant gone quiet).
     */
    public List<Job> list(String tenantId, JobStatus status, UUID before, int limit) {
        StringBuilder ids = new StringBuilder("SELECT job_id FROM jobs WHERE tenant_id = ?");
        List<Object> args = new ArrayList<>(List.of(tenantId));
        if (status != null) {
            ids.append(" AND status = ?");
            args.add(status.wire());
        }
        if (before != null) {
            ids.append(" AND job_id < ?");
            args.add(before);
        }
        ids.append(" ORDER BY job_id DESC LIMIT ?");
        args.add(limit);
        String sql = "SELECT " + COLUMNS + " FROM jobs WHERE job_id = ANY (ARRAY(" + ids + ")) ORDER BY job_id DESC";
        return jdbc.query(sql, JobStore::map, args.toArray());
    }

    public static Job map(ResultSet rs, int row) throws SQLException {
        return new Job(rs.getObject("job_id", UUID.class), rs.getString("tenant_id"), rs.getString("idempotency_key"),
                rs.getString("request_sha256"), JobStatus.fromWire(rs.getString("status")).orElseThrow(),
                rs.getString("preset_id"), rs.getInt("preset_version"), rs.getString("kind"), rs.getString("aspect_class"),
                rs.getString("provider"), rs.getObject("upload_id", UUID.class), rs.getString("source_sha256"),
                rs.getLong("source_bytes"), rs.getString("correlation_id"), rs.getLong("cost_micros"),
                rs.getInt("max_attempts"), rs.getInt("max_lifetime_seconds"), instant(rs, "expires_at"),
                rs.getInt("attempts"), rs.getString("error_category"), rs.getString("error_message"),
                instant(rs, "created_at"), instant(rs, "updated_at"), instant(rs, "finalized_at"),
                instant(rs, "next_attempt_at"), rs.getString("adapter_revision"), rs.getString("result"),
                rs.getObject("webhook_endpoint_id", UUID.class), rs.getObject("parent_job_id", UUID.class), rs.getString("pool"),
                rs.getString("waiting_reason"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }
}
