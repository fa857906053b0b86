package io.jobgate.workers;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Workers' stored outputs ({@code worker-outputs/<task_id>/<lease>}) are removed from the bucket (the embedded S3 API server)
 * once their task ended and its job is final, settled: the output of a job that succeeded (its promoted copy stays
 * readable), of one that failed as {@code invalid_output}, of a task failed without one; never the output of a task
 * still open. A round that removed objects but never marked its tasks (a crash between the two) is done again
 * harmlessly.
 */
class WorkerOutputRetentionTest extends GatewayTestBase {

    final io.jobgate.support.MovableClock clock = movableClock();

    @BeanInject
    WorkerOutputRetention retention;
    @BeanInject
    S3Client s3;

    final String bucket = System.getProperty("jobgate.s3.bucket", "jobgate");

    @Override
    protected Map<String, String> settings() throws Exception {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml"));
    }

    boolean stored(JsonNode lease) {
        try {
            // Each task of this class has one lease: its output is under its first lease's key.
            s3.headObject(b -> b.bucket(bucket).key("worker-outputs/" + lease.path("task_id").asText() + "/1"));
            return true;
        } catch (NoSuchKeyException gone) {
            return false;
        }
    }

    static String taskOf(JsonNode lease) {
        return lease.path("task_id").asText();
    }

    /** The one lease of the job's task (the jobs of this class are leased one at a time, as each is made). */
    static JsonNode only(JsonNode leases, UUID job) {
        assertThat(leases).hasSize(1);
        assertThat(leases.get(0).path("job_id").asText()).isEqualTo(job.toString());
        return leases.get(0);
    }

    @Test
    void outputsGoOnceTheirJobIsFinalAndNeverWhileTheTaskIsOpen() {
        try {
            removals();
        } finally {
            clock.reset();
        }
    }

    private void removals() {
        WorkerClient worker = new WorkerClient(api);
        // Succeeded: its output checked and promoted.
        UUID succeeded = worker.submit("square");
        JsonNode done = only(worker.lease("box-1", 1), succeeded);
        byte[] png = WorkerClient.render(done);
        assertThat(worker.putOutput(done, png).status()).isEqualTo(200);
        assertThat(worker.complete(done).status()).isEqualTo(200);
        Jobs.awaitStatus(succeeded, "succeeded");
        // Failed as invalid_output: an output of the wrong size, never readable.
        UUID invalid = worker.submit("square");
        JsonNode wrong = only(worker.lease("box-1", 1), invalid);
        assertThat(worker.putOutput(wrong, WorkerClient.render(wrong, 1088, 1024)).status()).isEqualTo(200);
        assertThat(worker.complete(wrong).status()).isEqualTo(200);
        Jobs.awaitStatus(invalid, "failed");
        assertThat(api.get(ACME, "/v1/jobs/" + invalid).json().path("error").path("category").asText()).isEqualTo("invalid_output");
        // Failed by its worker before it stored anything.
        UUID declined = worker.submit("square");
        JsonNode nothing = only(worker.lease("box-1", 1), declined);
        assertThat(worker.fail(nothing, "terminal").status()).isEqualTo(200);
        Jobs.awaitStatus(declined, "failed");
        // Still open: its output stored, the task leased, not completed.
        UUID open = worker.submit("square");
        JsonNode working = only(worker.lease("box-2", 1), open);
        assertThat(worker.putOutput(working, WorkerClient.render(working)).status()).isEqualTo(200);

        assertThat(stored(done)).isTrue();
        assertThat(stored(wrong)).isTrue();
        assertThat(retention.removeOutputs()).as("nothing before the jobs settled").isZero();
        assertThat(stored(done)).isTrue();

        clock.advance(WorkerOutputRetention.SETTLE.plusMinutes(1));
        assertThat(retention.removeOutputs()).as("the three ended tasks of final jobs").isEqualTo(3);
        assertThat(stored(done)).as("succeeded: the promoted copy is the job's output").isFalse();
        assertThat(stored(wrong)).as("failed as invalid_output").isFalse();
        assertThat(stored(working)).as("the open task's output stays").isTrue();
        assertThat(api.getBytes(ACME, "/v1/jobs/" + succeeded + "/output")).isEqualTo(png);
        assertThat(Db.count("SELECT count(*) FROM worker_tasks WHERE output_deleted_at IS NOT NULL")).isEqualTo(3);
        assertThat(Db.count("SELECT count(*) FROM worker_tasks WHERE task_id = ?::uuid AND output_deleted_at IS NULL", taskOf(working)))
                .isEqualTo(1);
        assertThat(retention.removeOutputs()).as("a round with nothing left").isZero();

        // A crash after the removal, before the mark: the next round removes the missing key again and marks it.
        Db.update("UPDATE worker_tasks SET output_deleted_at = NULL WHERE task_id = ?::uuid", taskOf(done));
        assertThat(retention.removeOutputs()).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM worker_tasks WHERE output_deleted_at IS NOT NULL")).isEqualTo(3);
        assertThat(stored(working)).isTrue();
    }
}
