package io.jobgate.api;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.workers.HeldSubmits;
import io.jobgate.workers.TaskObjects;
import io.jobgate.workers.WorkerFailure;
import io.jobgate.workers.WorkerTasks;
import io.jobgate.workers.WorkersSeen;
import org.apache.camel.Exchange;

/**
 * The worker protocol (docs/workers.md): external workers of a pull member lease its tasks, extend their leases, store
 * their output and end each task — over HTTP, with the member's worker key ({@code Authorization: Bearer}; its SHA-256
 * in {@code jobgate.provider.<name>.worker-key-sha256}), never a tenant's or the admin's. Every call under a lease
 * names its token; a token that is not the task's live one changes nothing ({@code 409 lease_lost}, or
 * {@code task_cancelled} once its job was cancelled: the worker stops). A worker's complete or fail is the answer of
 * the submit waiting for it on this instance ({@link HeldSubmits}); with none waiting here, it is applied to the job at
 * once, as a provider's webhook is, not at the poller's next check.
 */
public final class WorkersApi {

    /** The most tasks one lease call takes. */
    static final int MAX_LEASES = 32;
    /** The longest output a worker may store through the gateway. */
    static final int MAX_OUTPUT_BYTES = 64 << 20;
    static final int MAX_WORKER_ID = 128;
    static final int MAX_MESSAGE = 500;

    private final ProviderCatalog providers;
    private final WorkerTasks tasks;
    private final TaskObjects objects;
    private final Reconciler reconciler;
    private final Duration leaseFor;
    private final LeaseWaits waits;
    private final WorkersSeen seen;
    private final HeldSubmits held;

    /**
     * @param waits the long polls of this instance; null where it serves no API (nothing is parked)
     * @param seen  who called: the workers operators see
     * @param held  the submits of this instance waiting for their task's end
     */
    public WorkersApi(ProviderCatalog providers, WorkerTasks tasks, TaskObjects objects, Reconciler reconciler, Duration leaseFor,
                      LeaseWaits waits, WorkersSeen seen, HeldSubmits held) {
        this.providers = providers;
        this.tasks = tasks;
        this.objects = objects;
        this.reconciler = reconciler;
        this.leaseFor = leaseFor;
        this.waits = waits;
        this.seen = seen;
        this.held = held;
    }

    /**
     * A lease call's body: who asks, for how many tasks at most, and how long it may wait for one
     * ({@code wait_seconds}, 0: answer at once; {@link LeaseWaits}).
     */
    record LeaseRequest(String workerId, int max, int waitSeconds, String revision) {

        static final Set<String> FIELDS = Set.of("worker_id", "max", "wait_seconds", "revision");

        /** The body as the route takes it, or the problem it gets. */
        static LeaseRequest of(JsonNode request) {
            closed(request, FIELDS);
            String workerId = AdminApi.text(request, "worker_id", MAX_WORKER_ID);
            if (workerId == null || workerId.isBlank()) {
                throw ApiProblem.of(400, "invalid_parameter", "Name the worker: \"worker_id\" (1 to " + MAX_WORKER_ID + " characters).")
                        .with("field", "worker_id");
            }
            String revision = AdminApi.text(request, "revision", MAX_WORKER_ID);
            if (revision != null && (revision.isBlank() || revision.contains("@"))) {
                throw ApiProblem.of(400, "invalid_parameter", "\"revision\" is the label of the adapter revision the worker runs "
                        + "(e.g. gpubox-2, without its @hash).").with("field", "revision");
            }
            return new LeaseRequest(workerId.strip(), whole(request, "max", 1, MAX_LEASES, 1),
                    whole(request, "wait_seconds", 0, LeaseWaits.MAX_SECONDS, 0), revision == null ? null : revision.strip());
        }

        private static int whole(JsonNode request, String field, int min, int max, int absent) {
            JsonNode value = request.path(field);
            if (value.isMissingNode()) {
                return absent;
            }
            if (!value.isInt() || value.asInt() < min || value.asInt() > max) {
                throw ApiProblem.of(400, "invalid_parameter", "\"" + field + "\" is a whole number from " + min + " to " + max + ".")
                        .with("field", field);
            }
            return value.asInt();
        }
    }

    /**
     * {@code POST /v1/workers/{provider}/leases} {@code {worker_id, max, wait_seconds}}: up to {@code max} tasks, each
     * leased to the caller. A poll that may wait and finds none was parked ahead of the route ({@link LeaseWaits}) when
     * this instance knew the member idle; one that finds fewer than asked tells it so.
     */
    public void lease(Exchange exchange) {
        Provider member = member(exchange.getIn().getHeader("provider", String.class));
        authenticate(exchange, member);
        LeaseRequest request = LeaseRequest.of(AdminApi.request(exchange));
        long woken = waits == null ? 0 : waits.beforeLease(member.name(), request.revision());
        List<WorkerTasks.Task> leased = tasks.lease(member.name(), request.workerId(), request.max(), leaseFor,
                member.maxConcurrency(), labels(member, request.revision()));
        if (waits != null) {
            waits.leased(member.name(), request.revision(), woken, request.max(), leased.size());
        }
        seen.saw(member.name(), request.workerId(), "lease");
        HttpReply.write(exchange, 200, HttpReply.JSON, io.jobgate.workers.LeaseEnvelope.answer(leased, objects), Map.of());
    }

    /** {@code POST /v1/workers/tasks/{taskId}/heartbeat} {@code {lease_token}}: the lease extended, or why it is gone. */
    public void heartbeat(Exchange exchange) {
        WorkerTasks.Task task = task(exchange);
        UUID token = token(body(exchange, Set.of("lease_token")));
        WorkerTasks.Written beat = refusedUnlessOk(tasks.heartbeat(task.taskId(), token, leaseFor));
        // A fresh output URL with the extended lease: one rendering longer than a lease can still write directly.
        TaskObjects.Urls urls = objects.urls(beat.task());
        seen.saw(beat.task(), "heartbeat");
        HttpReply.json(exchange, 200, Map.of("task_id", task.taskId().toString(), "lease_expires_at",
                beat.task().leaseExpiresAt().toString(), "output_url", urls.output().toString(), "urls_expire_at",
                urls.expiresAt().toString()), Map.of());
    }

    /**
     * {@code PUT /v1/workers/tasks/{taskId}/output} (raw bytes; {@code Content-Type} their media type, header
     * {@code Lease-Token}): the output stored where the complete will name it. Stored again, it replaces the earlier.
     */
    public void putOutput(Exchange exchange) {
        WorkerTasks.Task task = task(exchange);
        UUID token = token(exchange.getIn().getHeader(LEASE_TOKEN, String.class), LEASE_TOKEN);
        // Only the live lease stores (and is extended), under its own key: should it be lost meanwhile, no complete reads that key.
        WorkerTasks.Task live = refusedUnlessOk(tasks.heartbeat(task.taskId(), token, leaseFor)).task();
        seen.saw(task, "output");
        byte[] bytes = output(exchange);
        String mediaType = mediaType(exchange.getIn().getHeader("Content-Type", String.class));
        objects.storeOutput(live, bytes, mediaType);
        HttpReply.json(exchange, 200, Map.of("task_id", task.taskId().toString(), "bytes", bytes.length, "media_type", mediaType), Map.of());
    }

    /**
     * {@code POST /v1/workers/tasks/{taskId}/complete}: the task rendered; the gateway checks and promotes its output as
     * any output and finalizes the job. Two forms:
     * <ul>
     *   <li>{@code {lease_token, media_type, billed_units, billed_unit}}: the output was stored before (the lease's
     *       {@code output_url}, or {@code PUT .../output});</li>
     *   <li>with header {@code Lease-Token}: the body is the output itself, {@code Content-Type} its media type, and
     *       headers {@code Billed-Units} and {@code Billed-Unit} what the worker billed. One call instead of two, and
     *       the bytes go to the submit waiting for them as they came.</li>
     * </ul>
     */
    public void complete(Exchange exchange) {
        WorkerTasks.Task task = task(exchange);
        Completion completion = Completion.of(exchange);
        // A lost lease hears so first, whatever it stored or carries. A lease that does not hold as read is read anew
        // (the task may be known as its submit wrote it, and a heartbeat through another instance may have extended it).
        WorkerTasks.Task read = tasks.holds(task, completion.token()) ? task : tasks.find(task.taskId()).orElse(task);
        WorkerTasks.Task live = refusedUnlessOk(tasks.live(read, completion.token())).task();
        TaskObjects.Stored stored;
        if (completion.output() != null) {
            // Stored as a PUT would store it: should this instance stop before its job is finalized, the output is there.
            stored = new TaskObjects.Stored(objects.storeOutput(live, completion.output(), completion.mediaType()), completion.output());
        } else {
            // Read whole when a submit waits for it here (it is not read again), else only found.
            stored = objects.stored(live, held.awaited(live))
                    .orElseThrow(() -> ApiProblem.of(409, "output_missing", "Store the output first: PUT /v1/workers/tasks/"
                            + task.taskId() + "/output, or to the lease's output_url; or send it as this call's body."));
        }
        WorkerTasks.Written done = refusedUnlessOk(tasks.complete(task.taskId(), completion.token(), stored.key(),
                completion.mediaType(), completion.units(), completion.unit()));
        seen.saw(done.task(), "complete");
        ended(exchange, done.task(), stored.bytes());
        HttpReply.json(exchange, 200, Map.of("task_id", task.taskId().toString(), "status", "succeeded"), Map.of());
    }

    /**
     * A complete's request, in either form: the JSON body ({@code lease_token, media_type, billed_units, billed_unit}),
     * or the output as the body with headers {@code Lease-Token}, {@code Content-Type}, {@code Billed-Units},
     * {@code Billed-Unit} ({@code output} then its bytes, else null).
     */
    record Completion(UUID token, String mediaType, BigDecimal units, String unit, byte[] output) {

        static Completion of(Exchange exchange) {
            String leaseHeader = exchange.getIn().getHeader(LEASE_TOKEN, String.class);
            Completion completion;
            if (leaseHeader != null) {
                String unit = exchange.getIn().getHeader("Billed-Unit", String.class);
                if (unit != null && unit.length() > 40) {
                    throw ApiProblem.of(400, "invalid_parameter", "\"Billed-Unit\" is at most 40 characters.").with("field", "Billed-Unit");
                }
                completion = new Completion(WorkersApi.token(leaseHeader, LEASE_TOKEN), WorkersApi.mediaType(exchange.getIn().getHeader("Content-Type", String.class)),
                        billedUnits(exchange.getIn().getHeader("Billed-Units", String.class), "Billed-Units"), unit, null);
            } else {
                JsonNode request = body(exchange, Set.of("lease_token", "media_type", "billed_units", "billed_unit"));
                JsonNode billed = request.path("billed_units");
                BigDecimal units = null;
                if (!billed.isMissingNode() && !billed.isNull()) {
                    if (!billed.isNumber() || billed.decimalValue().signum() < 0) {
                        throw ApiProblem.of(400, "invalid_parameter", "\"billed_units\" is a number, 0 or more.").with("field", "billed_units");
                    }
                    units = billed.decimalValue();
                }
                completion = new Completion(WorkersApi.token(request), WorkersApi.mediaType(AdminApi.text(request, "media_type", 100)), units,
                        AdminApi.text(request, "billed_unit", 40), null);
            }
            if (completion.units() != null && (completion.unit() == null || completion.unit().isBlank())) {
                String field = leaseHeader != null ? "Billed-Unit" : "billed_unit";
                throw ApiProblem.of(400, "invalid_parameter", "Name what the billed units count: \"" + field + "\" (e.g. gpu_seconds).")
                        .with("field", field);
            }
            return leaseHeader == null ? completion : new Completion(completion.token(), completion.mediaType(), completion.units(),
                    completion.unit(), WorkersApi.output(exchange));
        }
    }

    /** The header naming the lease a call with raw bytes is made under. */
    static final String LEASE_TOKEN = "Lease-Token";

    /** A call's body as a worker's output: present, and within the limit. */
    private static byte[] output(Exchange exchange) {
        byte[] bytes = exchange.getIn().getBody(byte[].class);
        if (bytes == null || bytes.length == 0) {
            throw ApiProblem.of(400, "invalid_parameter", "The output is the request's body: it was empty.");
        }
        if (bytes.length > MAX_OUTPUT_BYTES) {
            throw ApiProblem.of(413, "request_too_large", "An output stored through the gateway is at most " + MAX_OUTPUT_BYTES + " bytes.");
        }
        return bytes;
    }

    private static BigDecimal billedUnits(String text, String field) {
        if (text == null) {
            return null;
        }
        try {
            BigDecimal units = new BigDecimal(text.strip());
            if (units.signum() >= 0 && text.strip().length() <= 40) {
                return units;
            }
        } catch (NumberFormatException notANumber) {
            // refused below
        }
        throw ApiProblem.of(400, "invalid_parameter", "\"" + field + "\" is a number, 0 or more.").with("field", field);
    }

    /** {@code POST /v1/workers/tasks/{taskId}/fail} {@code {lease_token, category, message, retry_after_seconds}}. */
    public void fail(Exchange exchange) {
        WorkerTasks.Task task = task(exchange);
        JsonNode request = body(exchange, Set.of("lease_token", "category", "message", "retry_after_seconds"));
        UUID token = token(request);
        String category = AdminApi.text(request, "category", 20);
        WorkerFailure failure = WorkerFailure.parse(category).orElseThrow(() -> ApiProblem.of(400, "invalid_parameter",
                "\"category\" is terminal, transient or unknown.").with("field", "category"));
        String message = AdminApi.text(request, "message", MAX_MESSAGE);
        JsonNode after = request.path("retry_after_seconds");
        Integer retryAfter = null;
        if (!after.isMissingNode() && !after.isNull()) {
            if (!after.isInt() || after.asInt() < 0 || after.asInt() > 86_400 || failure != WorkerFailure.TRANSIENT) {
                throw ApiProblem.of(400, "invalid_parameter", "\"retry_after_seconds\" (0 to 86400) goes with category transient.")
                        .with("field", "retry_after_seconds");
            }
            retryAfter = after.asInt();
        }
        WorkerTasks.Written failed = refusedUnlessOk(tasks.fail(task.taskId(), token, failure.wire(), message, retryAfter));
        seen.saw(failed.task(), "fail");
        ended(exchange, failed.task(), null);
        HttpReply.json(exchange, 200, Map.of("task_id", task.taskId().toString(), "status", "failed"), Map.of());
    }

    /**
     * The revisions whose tasks a worker leases: the one it names, else the member's stable ones (a canary candidate's
     * tasks wait for a worker that names the candidate's label).
     */
    static Set<String> labels(Provider member, String named) {
        if (named != null) {
            return Set.of(named);
        }
        Set<String> stable = new java.util.HashSet<>();
        stable.add(member.label(null));
        member.kinds().forEach(kind -> stable.add(member.label(kind)));
        return stable;
    }

    /**
     * The worker's end of the task reaches its job now: the submit waiting for it here answers with it; a job still being
     * submitted elsewhere is told through the route ({@link #ENDED_ELSEWHERE}); else the lookup the poller would make is
     * made at once.
     */
    private void ended(Exchange exchange, WorkerTasks.Task task, byte[] output) {
        if (held.handOver(new HeldSubmits.Answer(task, output))) {
            return;
        }
        reconciler.find(task.jobId()).ifPresent(job -> {
            if (job.status() == io.jobgate.job.JobStatus.SUBMITTING && job.attempts() == task.attempt()) {
                // Its submit waits on another instance: the route tells every instance (topic jobs.worker-ends).
                exchange.setProperty(ENDED_ELSEWHERE, io.jobgate.common.Json.write(Map.of("job_id", task.jobId().toString(),
                        "attempt", task.attempt())));
            } else {
                reconciler.check(job, "worker");
            }
        });
    }

    /** Exchange property: a worker's end whose submit may wait on another instance ({@code {job_id, attempt}}). */
    public static final String ENDED_ELSEWHERE = "jobgateWorkerEndedElsewhere";

    /** The pull member of that name: a provider with a worker key. */
    static java.util.Optional<Provider> pullMember(ProviderCatalog providers, String name) {
        return providers.find(name).filter(p -> p.settings().containsKey(WORKER_KEY));
    }

    /** Whether {@code authorization} ({@code Bearer <key>}) carries a worker key of {@code member}. */
    static boolean keyMatches(Provider member, String authorization) {
        String digest = member.settings().get(WORKER_KEY).trim().toLowerCase(java.util.Locale.ROOT);
        return Digests.sha256Matches(AdminApi.bearer(authorization), digest);
    }

    private Provider member(String name) {
        return pullMember(providers, name)
                .orElseThrow(() -> ApiProblem.of(404, "not_found", "No pull member '" + name + "' (a provider with "
                        + "jobgate.provider.<name>." + WORKER_KEY + ").").with("field", "provider"));
    }

    /** The setting that makes a provider a pull member: the SHA-256 (hex) of its workers' key. */
    public static final String WORKER_KEY = "worker-key-sha256";

    private static void authenticate(Exchange exchange, Provider member) {
        if (!keyMatches(member, exchange.getIn().getHeader("Authorization", String.class))) {
            throw ApiProblem.unauthorized("A worker key of pull member " + member.name() + " is required (Authorization: Bearer <worker key>).");
        }
    }

    /** The task of the path, found and authenticated by its member's worker key (an unknown task: 404 only after the key). */
    private WorkerTasks.Task task(Exchange exchange) {
        String id = exchange.getIn().getHeader("taskId", String.class);
        UUID taskId;
        try {
            taskId = UUID.fromString(id);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw ApiProblem.of(404, "not_found", "No task '" + id + "'.");
        }
        // A task its submit handed to a poll here is known as written (its submit waits): no statement to read it.
        WorkerTasks.Task task = held.handed(taskId).or(() -> tasks.find(taskId))
                .orElseThrow(() -> ApiProblem.of(404, "not_found", "No task " + taskId + "."));
        authenticate(exchange, member(task.provider()));
        return task;
    }

    private static JsonNode body(Exchange exchange, Set<String> fields) {
        return closed(AdminApi.request(exchange), fields);
    }

    /** The request, refused if it has a field the call does not (a worker must not invent envelope fields). */
    private static JsonNode closed(JsonNode request, Set<String> fields) {
        request.fieldNames().forEachRemaining(field -> {
            if (!fields.contains(field)) {
                throw ApiProblem.of(422, "invalid_request", "\"" + field + "\" is not a field of this call; its fields: "
                        + String.join(", ", new java.util.TreeSet<>(fields)) + ".").with("field", field);
            }
        });
        return request;
    }

    private static UUID token(JsonNode request) {
        return token(AdminApi.text(request, "lease_token", 36), "lease_token");
    }

    private static UUID token(String text, String field) {
        try {
            return UUID.fromString(text);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw ApiProblem.of(400, "invalid_parameter", "\"" + field + "\" is the lease's token, as the lease gave it.").with("field", field);
        }
    }

    private static String mediaType(String header) {
        String type = header == null ? "" : header.split(";")[0].trim().toLowerCase(java.util.Locale.ROOT);
        if (!type.matches("[a-z]+/[a-z0-9.+-]+")) {
            throw ApiProblem.of(400, "invalid_parameter", "Name the output's media type (e.g. image/png).").with("field", "media_type");
        }
        return type;
    }

    private static WorkerTasks.Written refusedUnlessOk(WorkerTasks.Written written) {
        if (written.ok()) {
            return written;
        }
        throw switch (written.refusal()) {
            case NOT_FOUND -> ApiProblem.of(404, "not_found", "No such task.");
            case CANCELLED -> ApiProblem.of(409, "task_cancelled", "The task's job was cancelled: stop working on it.");
            case ENDED -> ApiProblem.of(409, "task_ended", "The task has ended already; this call changed nothing.");
            case LEASE_LOST -> ApiProblem.of(409, "lease_lost", "This lease token is not the task's live one (its lease ran out, "
                    + "or another worker holds it now): this call changed nothing; stop working on it.");
        };
    }
}
