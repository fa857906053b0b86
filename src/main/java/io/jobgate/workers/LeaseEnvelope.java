package io.jobgate.workers;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.util.RawValue;
import io.jobgate.common.Json;

/**
 * What a worker receives for each task it leases (docs/workers.md, "The envelope"): the task, its job and attempt, the
 * lease's token and expiry, the rendered request, the revision, and the time-limited URLs of its source and output.
 * One shape whether the task was leased by the route's lease call or handed to a waiting poll as it was written.
 */
public final class LeaseEnvelope {

    private LeaseEnvelope() {
    }

    /** The envelope of a task just leased. */
    public static Map<String, Object> of(WorkerTasks.Task task, TaskObjects objects) {
        Map<String, Object> lease = new LinkedHashMap<>();
        lease.put("task_id", task.taskId().toString());
        lease.put("job_id", task.jobId().toString());
        lease.put("attempt", task.attempt());
        lease.put("lease_token", task.leaseToken().toString());
        lease.put("lease_expires_at", task.leaseExpiresAt().toString());
        // As stored (jsonb's text, valid JSON): written as it is, not parsed and written again.
        lease.put("request", new RawValue(task.envelope()));
        if (task.revision() != null) {
            lease.put("revision", task.revision());
        }
        TaskObjects.Urls urls = objects.urls(task);
        if (urls.source() != null) {
            lease.put("source_url", urls.source().toString());
            lease.put("source_media_type", urls.sourceMediaType());
        }
        lease.put("output_url", urls.output().toString());
        lease.put("urls_expire_at", urls.expiresAt().toString());
        return lease;
    }

    /** A lease call's answer: {@code {"leases": [...]}}, the envelopes of the tasks leased. */
    public static String answer(List<WorkerTasks.Task> leased, TaskObjects objects) {
        return Json.write(Map.of("leases", leased.stream().map(task -> of(task, objects)).toList()));
    }
}
