package io.jobgate.evaluation;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;

/**
 * Reads invoice outputs back (docs/evaluation.md): the promoted output of every succeeded image job and
 * the held output of every canary candidate's attempt, each once, through the evaluator route
 * ({@code direct:evaluate-invoice}: image bytes in, the text read out), scored field by field against the
 * evaluation manifest beside it ({@link InvoiceScorer}) and stored in {@code evaluations}; a canary's
 * quality gate and {@code jobgate evaluate} read them from there.
 */
public final class Evaluations {

    private static final Logger LOG = LoggerFactory.getLogger(Evaluations.class);

    /** The evaluator route (a drop-in file under routes/evaluators/). */
    public static final String EVALUATOR = "direct:evaluate-invoice";
    /** A claim older than this (its evaluator died) is taken over. */
    static final Duration CLAIM = Duration.ofMinutes(10);

    /** Told of every scored output: metrics by revision. */
    @FunctionalInterface
    public interface Listener {
        void scored(String provider, String revision, boolean held, InvoiceScorer.Score score);
    }

    private final JdbcTemplate jdbc;
    private final S3Client s3;
    private final String bucket;
    private final ProducerTemplate producer;
    private final Clock clock;
    private final int batch;
    private final Duration lookback;
    private final String owner = "evaluator-" + UUID.randomUUID().toString().substring(0, 8);
    private volatile Listener listener = (p, r, h, s) -> { };

    /** @param lookback succeeded jobs that ended longer ago than this are not evaluated any more */
    public Evaluations(JdbcTemplate jdbc, S3Client s3, String bucket, ProducerTemplate producer, Clock clock, int batch, Duration lookback) {
        this.jdbc = jdbc;
        this.s3 = s3;
        this.bucket = bucket;
        this.producer = producer;
        this.clock = clock;
        this.batch = batch;
        this.lookback = lookback;
    }

    public void onScored(Listener listener) {
        this.listener = listener;
    }

    private record Due(UUID jobId, int attempt, String provider, String revision, String presetId, int presetVersion,
                       boolean held, String outputKey, String manifestKey) {
    }

    /** Route step: claims up to a batch of outputs not evaluated yet and evaluates them. */
    public void evaluateDue(Exchange exchange) {
        int done = 0;
        for (Due due : claim()) {
            evaluate(due);
            done++;
        }
        exchange.getMessage().setHeader("evaluated", done);
    }

    private List<Due> claim() {
        Instant now = clock.instant();
        Timestamp since = Timestamp.from(now.minus(lookback));
        List<Due> due = new ArrayList<>();
        List<Due> rows = jdbc.query("""
                SELECT j.job_id, (j.result->>'attempt')::int AS attempt, j.provider, j.result->>'adapter_revision' AS revision,
                       j.preset_id, j.preset_version, false AS held, j.result->>'output_key' AS output_key,
                       j.result->>'manifest_key' AS manifest_key
                  FROM jobs j
                 WHERE j.status = %s AND j.finalized_at >= ? AND j.kind = 'image' AND j.result->>'manifest_key' IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.job_id = j.job_id AND e.attempt = (j.result->>'attempt')::int)
                UNION ALL
                SELECT a.job_id, a.attempt, a.adapter, a.adapter_revision, j.preset_id, j.preset_version, true,
                       a.held_output->>'output_key', a.held_output->>'manifest_key'
                  FROM attempts a JOIN jobs j ON j.job_id = a.job_id
                 WHERE a.held_output IS NOT NULL AND a.ended_at >= ? AND j.kind = 'image'
                   AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.job_id = a.job_id AND e.attempt = a.attempt)
                LIMIT ?""".formatted(SUCCEEDED), Evaluations::due, since, since, batch);
        for (Due r : rows) {
            int claimed = jdbc.update("""
                    INSERT INTO evaluations (job_id, attempt, provider, revision, preset_id, preset_version, held, claimed_by, claimed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
                    r.jobId(), r.attempt(), r.provider(), r.revision(), r.presetId(), r.presetVersion(), r.held(), owner,
                    Timestamp.from(now));
            if (claimed == 1) {
                due.add(r);
            }
        }
        // Claims of an evaluator that died are taken over.
        due.addAll(jdbc.query("""
                UPDATE evaluations e SET claimed_by = ?, claimed_at = ?
                  FROM (SELECT job_id, attempt FROM evaluations WHERE evaluated_at IS NULL AND error IS NULL AND claimed_at < ?
                         LIMIT ? FOR UPDATE SKIP LOCKED) stale
                 WHERE e.job_id = stale.job_id AND e.attempt = stale.attempt
                RETURNING e.job_id, e.attempt, e.provider, e.revision, e.preset_id, e.preset_version, e.held,
                          (SELECT CASE WHEN e.held THEN a.held_output->>'output_key' ELSE j.result->>'output_key' END
                             FROM jobs j JOIN attempts a ON a.job_id = j.job_id AND a.attempt = e.attempt WHERE j.job_id = e.job_id) AS output_key,
                          (SELECT CASE WHEN e.held THEN a.held_output->>'manifest_key' ELSE j.result->>'manifest_key' END
                             FROM jobs j JOIN attempts a ON a.job_id = j.job_id AND a.attempt = e.attempt WHERE j.job_id = e.job_id) AS manifest_key""",
                Evaluations::due, owner, Timestamp.from(now), Timestamp.from(now.minus(CLAIM)), batch));
        return due;
    }

    /**
     * The succeeded status as a literal, the way the partial index {@code jobs_succeeded_at} (V20.1) names it:
     * a parameter there leaves a generic plan unable to use that index.
     */
    private static final String SUCCEEDED = io.jobgate.job.JobStatus.SUCCEEDED.sqlLiteral();

    private static Due due(java.sql.ResultSet r, int row) throws java.sql.SQLException {
        return new Due(r.getObject("job_id", UUID.class), r.getInt("attempt"), r.getString("provider"),
                r.getString("revision"), r.getString("preset_id"), r.getInt("preset_version"),
                r.getBoolean("held"), r.getString("output_key"), r.getString("manifest_key"));
    }

    private void evaluate(Due due) {
        try {
            JsonNode manifest = Json.parseObject(object(due.manifestKey()));
            JsonNode expected = manifest.path("expected");
            if (!InvoiceScorer.scores(expected)) {
                store(due, null, "not an invoice: its manifest expects no line items and totals");
                return;
            }
            String text = producer.requestBody(EVALUATOR, object(due.outputKey()), String.class);
            InvoiceScorer.Score score = InvoiceScorer.score(expected, text == null ? "" : text);
            store(due, score, null);
            listener.scored(due.provider(), due.revision(), due.held(), score);
            LOG.info("evaluated job={} attempt={} revision={} held={} fields={}/{} totals_correct={}", due.jobId(), due.attempt(),
                    due.revision(), due.held(), score.correct(), score.total(), score.totalsCorrect());
        } catch (RuntimeException e) {
            LOG.warn("evaluation of job {} attempt {} failed: {}", due.jobId(), due.attempt(), e.toString());
            store(due, null, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private byte[] object(String key) {
        return s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(key).build()).asByteArray();
    }

    private void store(Due due, InvoiceScorer.Score score, String error) {
        jdbc.update("""
                UPDATE evaluations SET evaluated_at = ?, evaluator = ?, fields_correct = ?, fields_total = ?, totals_correct = ?,
                                       scores = CAST(? AS jsonb), error = ?
                 WHERE job_id = ? AND attempt = ?""",
                score == null ? null : Timestamp.from(clock.instant()), EVALUATOR,
                score == null ? null : score.correct(), score == null ? null : score.total(),
                score == null ? null : score.totalsCorrect(), score == null ? null : Json.write(score.view()), error,
                due.jobId(), due.attempt());
    }

    /** A job's evaluated outputs, by attempt: what an operator sees beside its attempts. */
    public List<Map<String, Object>> ofJob(UUID jobId) {
        List<Map<String, Object>> all = new ArrayList<>();
        for (Map<String, Object> r : jdbc.queryForList("""
                SELECT attempt, revision, held, evaluated_at, evaluator, fields_correct, fields_total, totals_correct,
                       scores::text AS scores, error
                  FROM evaluations WHERE job_id = ? ORDER BY attempt""", jobId)) {
            Map<String, Object> v = new LinkedHashMap<>(r);
            v.put("evaluated_at", r.get("evaluated_at") instanceof Timestamp t ? t.toInstant().toString() : null);
            v.put("scores", r.get("scores") == null ? null : Json.parseObject(((String) r.get("scores")).getBytes(
                    java.nio.charset.StandardCharsets.UTF_8)));
            all.add(v);
        }
        return all;
    }

    /**
     * Per preset and revision, outputs evaluated since {@code since}: jobs, field accuracy, totals correct,
     * and the outputs the checks rejected ({@code invalid_output} attempts) of the same revisions.
     */
    public List<Map<String, Object>> table(Instant since) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Map<String, Object> r : jdbc.queryForList("""
                WITH scored AS (
                    SELECT e.preset_id, e.preset_version, e.provider, e.revision, bool_or(e.held) AS held,
                           count(DISTINCT e.job_id) AS jobs, sum(e.fields_correct) AS correct, sum(e.fields_total) AS total,
                           count(*) FILTER (WHERE e.totals_correct) AS totals_correct, count(*) AS outputs
                      FROM evaluations e WHERE e.evaluated_at >= ? GROUP BY 1, 2, 3, 4),
                rejected AS (
                    SELECT j.preset_id, j.preset_version, a.adapter AS provider, a.adapter_revision AS revision, count(*) AS rejected
                      FROM attempts a JOIN jobs j ON j.job_id = a.job_id
                     WHERE a.error_category = 'invalid_output' AND a.started_at >= ? GROUP BY 1, 2, 3, 4)
                SELECT coalesce(s.preset_id, r.preset_id) AS preset_id, coalesce(s.preset_version, r.preset_version) AS preset_version,
                       coalesce(s.provider, r.provider) AS provider, coalesce(s.revision, r.revision) AS revision,
                       coalesce(s.held, false) AS held, coalesce(s.jobs, 0) AS jobs, coalesce(s.outputs, 0) AS outputs,
                       s.correct, s.total, coalesce(s.totals_correct, 0) AS totals_correct, coalesce(r.rejected, 0) AS rejected
                  FROM scored s FULL JOIN rejected r USING (preset_id, preset_version, provider, revision)
                 ORDER BY 1, 2, 4""", Timestamp.from(since), Timestamp.from(since))) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("preset_id", r.get("preset_id"));
            row.put("preset_version", r.get("preset_version"));
            row.put("provider", r.get("provider"));
            row.put("revision", r.get("revision"));
            row.put("candidate_outputs", r.get("held"));
            row.put("jobs", ((Number) r.get("jobs")).longValue());
            row.put("outputs", ((Number) r.get("outputs")).longValue());
            long total = r.get("total") == null ? 0 : ((Number) r.get("total")).longValue();
            row.put("field_accuracy", total == 0 ? null : ((Number) r.get("correct")).doubleValue() / total);
            row.put("totals_correct", ((Number) r.get("totals_correct")).longValue());
            row.put("rejected_outputs", ((Number) r.get("rejected")).longValue());
            rows.add(row);
        }
        return rows;
    }
}
