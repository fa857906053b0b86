package io.jobgate.workers;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.infra.ObjectUrls;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * A task's objects in the gateway's bucket: the source its worker reads, and the output it writes, each through the
 * gateway or with a time-limited URL (docs/workers.md). Each lease writes its output under a key of its own
 * ({@code worker-outputs/<task>/<lease number>}, the task's n-th lease) and a complete names its own lease's: a worker
 * that lost its lease (its URL still valid) can write only where no complete will ever read. The numbers also say,
 * without listing the bucket, every key a task's leases may have written ({@link #outputKeys}).
 */
public final class TaskObjects {

    /** Where a worker's output waits in the bucket until the gateway checks and promotes it. */
    static final String OUTPUT_PREFIX = "worker-outputs/";

    /** A lease's URLs: the source to read (null when the job has none), the output to write, and until when. */
    public record Urls(URI source, String sourceMediaType, URI output, java.time.Instant expiresAt) {
    }

    private final S3Client s3;
    private final ObjectUrls urls;
    private final String bucket;
    private final java.time.Clock clock;

    public TaskObjects(S3Client s3, ObjectUrls urls, String bucket, java.time.Clock clock) {
        this.s3 = s3;
        this.urls = urls;
        this.bucket = bucket;
        this.clock = clock;
    }

    static String outputKey(UUID taskId, int lease) {
        return OUTPUT_PREFIX + taskId + "/" + lease;
    }

    /** Every key the first {@code leases} leases of the task may have written. */
    static List<String> outputKeys(UUID taskId, int leases) {
        List<String> keys = new java.util.ArrayList<>(leases);
        for (int lease = 1; lease <= leases; lease++) {
            keys.add(outputKey(taskId, lease));
        }
        return keys;
    }

    /** The URLs of a task just leased, valid as long as its lease is. */
    public Urls urls(WorkerTasks.Task task) {
        Duration valid = Duration.between(clock.instant(), task.leaseExpiresAt());
        URI source = task.sourceKey() == null ? null : urls.get(bucket, task.sourceKey(), valid);
        return new Urls(source, task.sourceMediaType(), urls.put(bucket, outputKey(task.taskId(), task.leases()), valid),
                task.leaseExpiresAt());
    }

    /** The output stored under the task's live lease: its key, and its bytes when they were asked for. */
    public record Stored(String key, byte[] bytes) {
    }

    /**
     * The output stored under the task's live lease (the task as its live lease's call read it), if one was: its bytes
     * read too when {@code withBytes} (a submit waits for them here, {@link HeldSubmits}), else only found.
     */
    public Optional<Stored> stored(WorkerTasks.Task live, boolean withBytes) {
        String key = outputKey(live.taskId(), live.leases());
        try {
            if (withBytes) {
                return Optional.of(new Stored(key, read(key)));
            }
            s3.headObject(HeadObjectRequest.builder().bucket(bucket).key(key).build());
            return Optional.of(new Stored(key, null));
        } catch (NoSuchKeyException missing) {
            return Optional.empty();
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /** Stores a worker's output under its live lease (the task as that lease's call read it), where its complete will name it. */
    public String storeOutput(WorkerTasks.Task live, byte[] bytes, String mediaType) {
        String key = outputKey(live.taskId(), live.leases());
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(key).contentType(mediaType).build(), RequestBody.fromBytes(bytes));
        return key;
    }

    /** The bytes of an output a complete named. */
    byte[] read(String key) {
        return s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(key).build()).asByteArray();
    }
}
