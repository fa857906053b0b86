package io.jobgate.workers;

import java.util.Optional;
import java.util.UUID;

import org.apache.camel.Exchange;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * The adapter of a pull member (docs/workers.md): its route ({@code routes/providers/<name>.camel.yaml}, drop-in like
 * any adapter) hands every operation here. A submit writes the attempt's task (the job waits in
 * {@code provider_pending}, as for any async provider); a lookup reads it: waiting or leased is {@code pending}, a
 * worker's complete is {@code succeeded} with the output it stored (checked and promoted by the gateway as any
 * output), a worker's fail its category; a cancel ends the task, and its worker hears so at its next heartbeat.
 * The properties are the adapter contract's ({@code AdapterContract}), named here as text: workers may not use adapter.
 */
public final class PullAdapter {

    /** Where a worker's output waits in the bucket until the gateway checks and promotes it. */
    static final String OUTPUT_PREFIX = "worker-outputs/";

    private final WorkerTasks tasks;
    private final S3Client s3;
    private final String bucket;
    /** Told the member of each task written: a worker waiting on this instance may lease it now. */
    private volatile java.util.function.Consumer<String> taskWaiting = member -> { };

    public PullAdapter(WorkerTasks tasks, S3Client s3, String bucket) {
        this.tasks = tasks;
        this.s3 = s3;
        this.bucket = bucket;
    }

    /** Whom to tell, with the member's name, that a task waits to be leased (the long polls of its workers). */
    public void onTaskWaiting(java.util.function.Consumer<String> listener) {
        this.taskWaiting = listener;
    }

    /** The adapter route's one step. */
    public void adapt(Exchange exchange) {
        String operation = exchange.getProperty("JobgateOperation", String.class);
        switch (operation == null ? "" : operation) {
            case "submit" -> submit(exchange);
            case "lookup" -> lookup(exchange);
            case "cancel" -> cancel(exchange);
            default -> throw new IllegalArgumentException("a pull member's adapter serves submit, lookup and cancel, not " + operation);
        }
    }

    private void submit(Exchange exchange) {
        WorkerTasks.Task task = tasks.submit(exchange.getProperty("JobgateProvider", String.class),
                UUID.fromString(exchange.getProperty("JobgateJobId", String.class)),
                exchange.getProperty("JobgateAttempt", Integer.class), exchange.getIn().getBody(String.class));
        exchange.setProperty("JobgateProviderTask", task.taskId().toString());
        exchange.setProperty("JobgateOutcome", "pending");
        taskWaiting.accept(task.provider()); // were it not visible yet, the long polls' periodic check finds it
    }

    private void lookup(Exchange exchange) {
        Optional<WorkerTasks.Task> found = task(exchange);
        if (found.isEmpty()) {
            // No task for this attempt: its submit never wrote one, so a resubmit is safe.
            exchange.setProperty("JobgateOutcome", "absent");
            return;
        }
        WorkerTasks.Task task = found.get();
        switch (task.status()) {
            case WAITING, LEASED -> exchange.setProperty("JobgateOutcome", "pending");
            case SUCCEEDED -> {
                exchange.setProperty("JobgateOutcome", "succeeded");
                exchange.setProperty("JobgateOutputBytes", s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket)
                        .key(task.outputKey()).build()).asByteArray());
                exchange.setProperty("JobgateOutputMediaType", task.outputMediaType());
                if (task.billedUnits() != null) {
                    exchange.setProperty("JobgateBilledUnits", task.billedUnits().toPlainString());
                    exchange.setProperty("JobgateBilledUnit", task.billedUnit());
                }
            }
            case FAILED -> {
                WorkerFailure failure = WorkerFailure.of(task.errorCategory());
                exchange.setProperty("JobgateOutcome", failure.outcome());
                exchange.setProperty("JobgateErrorMessage", task.errorMessage());
                if (task.retryAfterSeconds() != null) {
                    exchange.setProperty("JobgateRetryAfter", task.retryAfterSeconds().toString());
                }
            }
            // Only a cancelled job's task is cancelled, and a job that ended is asked nothing: should one still wait on
            // it, no worker renders it any more, and a submit anew is safe.
            case CANCELLED -> exchange.setProperty("JobgateOutcome", "absent");
        }
    }

    private void cancel(Exchange exchange) {
        task(exchange).ifPresent(task -> tasks.cancel(task.taskId()));
        exchange.setProperty("JobgateOutcome", "cancelled");
    }

    private Optional<WorkerTasks.Task> task(Exchange exchange) {
        String task = exchange.getProperty("JobgateProviderTask", String.class);
        if (task == null) {
            return Optional.empty();
        }
        try {
            return tasks.find(UUID.fromString(task));
        } catch (IllegalArgumentException notOurs) {
            return Optional.empty();
        }
    }

    /** The key of the output stored for the task, if one was. */
    public Optional<String> storedOutput(UUID taskId) {
        String key = OUTPUT_PREFIX + taskId;
        try {
            s3.headObject(software.amazon.awssdk.services.s3.model.HeadObjectRequest.builder().bucket(bucket).key(key).build());
            return Optional.of(key);
        } catch (software.amazon.awssdk.services.s3.model.NoSuchKeyException missing) {
            return Optional.empty();
        } catch (software.amazon.awssdk.services.s3.model.S3Exception e) {
            if (e.statusCode() == 404) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /** Stores a worker's output where its task's complete will name it (the bucket's {@code worker-outputs/}). */
    public String storeOutput(UUID taskId, byte[] bytes, String mediaType) {
        String key = OUTPUT_PREFIX + taskId;
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(key).contentType(mediaType).build(), RequestBody.fromBytes(bytes));
        return key;
    }
}
