package io.jobgate.workers;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;

/**
 * Workers' stored outputs removed once nothing can read them (route {@code retention}, role sweeper; docs/operating.md,
 * "What is kept"). A worker's output waits under {@code worker-outputs/<task_id>/<lease>} (TaskObjects) until its task's lookup checks it
 * and promotes a copy; once the task ended and its job is final, the job's output is that copy (succeeded) or none
 * may ever be read (failed, cancelled), so the stored one goes. A batch of such tasks (index
 * {@code worker_tasks_outputs_to_remove}: only ended tasks not yet marked enter it) has its objects removed by S3
 * DeleteObjects, then is marked ({@code output_deleted_at}). Removing comes first: a crash between the two leaves tasks
 * unmarked, and the next round removes keys that are gone already (not an error to S3) and marks them. A task that
 * stored no output is marked the same way. Two instances on the same batch remove the same keys twice, harmlessly.
 *
 * <p>A job is taken only {@link #SETTLE} after it became final: a worker whose store passed its lease check just
 * before the job was cancelled may still be writing the object, and removing it before that lands would leave it
 * behind for good.
 */
public final class WorkerOutputRetention {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerOutputRetention.class);

    /** Longer than a store through the gateway takes after its lease check (at most 64 MiB). */
    static final Duration SETTLE = Duration.ofMinutes(10);
    /** The most keys one DeleteObjects request takes (the S3 API's limit). */
    static final int PER_REQUEST = 1000;

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final S3Client s3;
    private final String bucket;
    private final int batch;

    public WorkerOutputRetention(JdbcTemplate jdbc, Clock clock, S3Client s3, String bucket, int batch) {
        this.jdbc = jdbc;
        this.clock = clock;
        this.s3 = s3;
        this.bucket = bucket;
        this.batch = batch;
    }

    /** Route step: one batch; header {@code workerOutputsRemoved} says how many tasks were done. */
    public void sweep(Exchange exchange) {
        exchange.getMessage().setHeader("workerOutputsRemoved", removeOutputs());
    }

    /** Removes the stored outputs of a batch of ended tasks whose job is final; returns how many tasks were marked. */
    public int removeOutputs() {
        Instant now = clock.instant();
        // The jobs table is read, never written: finalized_at is set once, when the job became final.
        java.util.Map<UUID, Integer> leases = new java.util.LinkedHashMap<>();
        jdbc.query("""
                SELECT t.task_id, t.leases FROM worker_tasks t
                 WHERE t.output_deleted_at IS NULL AND t.status IN ('succeeded', 'failed', 'cancelled')
                   AND (SELECT j.finalized_at FROM jobs j WHERE j.job_id = t.job_id) < ?
                 ORDER BY t.updated_at LIMIT ?""", rs -> {
                    leases.put(rs.getObject("task_id", UUID.class), rs.getInt("leases"));
                }, Timestamp.from(now.minus(SETTLE)), batch);
        List<UUID> tasks = new ArrayList<>(leases.keySet());
        int marked = 0;
        for (int from = 0; from < tasks.size(); from += PER_REQUEST) {
            List<UUID> chunk = tasks.subList(from, Math.min(tasks.size(), from + PER_REQUEST));
            Set<UUID> removed = remove(chunk, leases);
            if (!removed.isEmpty()) {
                marked += jdbc.update("UPDATE worker_tasks SET output_deleted_at = ? WHERE task_id = ANY (?) AND output_deleted_at IS NULL",
                        Timestamp.from(clock.instant()), removed.toArray(UUID[]::new));
            }
        }
        return marked;
    }

    /**
     * The keys every lease of these tasks may have written, in DeleteObjects requests of at most {@link #PER_REQUEST};
     * the tasks none of whose keys S3 refused (a key that was never there is no refusal).
     */
    private Set<UUID> remove(List<UUID> tasks, java.util.Map<UUID, Integer> leases) {
        List<ObjectIdentifier> keys = new ArrayList<>();
        tasks.forEach(task -> TaskObjects.outputKeys(task, leases.get(task))
                .forEach(key -> keys.add(ObjectIdentifier.builder().key(key).build())));
        Set<UUID> removed = new HashSet<>(tasks);
        for (int from = 0; from < keys.size(); from += PER_REQUEST) {
            List<ObjectIdentifier> request = keys.subList(from, Math.min(keys.size(), from + PER_REQUEST));
            DeleteObjectsResponse answer = s3.deleteObjects(b -> b.bucket(bucket).delete(d -> d.objects(request).quiet(true)));
            answer.errors().forEach(error -> {
                LOG.warn("worker output {} not removed ({} {}): the next round tries again", error.key(), error.code(), error.message());
                String task = error.key().substring(TaskObjects.OUTPUT_PREFIX.length());
                removed.remove(UUID.fromString(task.substring(0, task.indexOf('/'))));
            });
        }
        return removed;
    }
}
