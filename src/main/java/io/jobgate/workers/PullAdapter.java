package io.jobgate.workers;

import java.util.Optional;
import java.util.UUID;

import org.apache.camel.Exchange;

/**
 * The adapter of a pull member (docs/workers.md): its route ({@code routes/providers/<name>.camel.yaml}, drop-in like
 * any adapter) hands every operation here. A submit writes the attempt's task (leased, as it is written, to a worker
 * whose poll waits on this instance, when one does: {@link WaitingWorkers}) and waits for its worker's end up to
 * the call's deadline ({@link HeldSubmits}), as a call waits for a provider's answer; past it, the job waits in
 * {@code provider_pending}, as for any async provider, and a lookup reads the task: waiting or leased is
 * {@code pending}, a worker's complete is {@code succeeded} with the output it stored (checked and promoted by the
 * gateway as any output), a worker's fail its category. A cancel ends the task; its worker hears so at its next
 * heartbeat.
 * The properties are the adapter contract's ({@code AdapterContract}), named here as text: workers may not use adapter.
 */
public final class PullAdapter {

    private final WorkerTasks tasks;
    private final TaskObjects objects;
    private final WorkersSeen seen;
    private final HeldSubmits held;
    private final java.util.function.Function<String, java.time.Duration> absentAfter;
    /** Told the member of each task written: a worker waiting on this instance may lease it now. */
    private volatile java.util.function.Consumer<String> taskWaiting = member -> { };
    /** The long polls a task goes to as it is written ({@link #handTo}); null: none (this instance serves no API). */
    private volatile WaitingWorkers waitingWorkers;
    private volatile java.time.Duration leaseFor;
    private volatile java.util.function.ToIntFunction<String> memberLimit;

    /**
     * @param absentAfter per member, how long no worker of it may be seen before it counts as down
     *                    ({@code jobgate.provider.<member>.worker-absent-seconds}); null: it never does
     */
    public PullAdapter(WorkerTasks tasks, TaskObjects objects, WorkersSeen seen, HeldSubmits held,
                       java.util.function.Function<String, java.time.Duration> absentAfter) {
        this.tasks = tasks;
        this.objects = objects;
        this.seen = seen;
        this.held = held;
        this.absentAfter = absentAfter;
    }

    /** The member counts as down: it has {@code worker-absent-seconds} and no worker of it was seen within them. */
    private java.time.Duration absent(String member) {
        java.time.Duration after = absentAfter.apply(member);
        return after != null && !seen.seenWithin(member, after) ? after : null;
    }

    /**
     * The long polls of this instance a task may go to as it is written ({@link WaitingWorkers}), leased for
     * {@code leaseFor} within each member's {@code memberLimit} leases at once.
     */
    public void handTo(WaitingWorkers waiting, java.time.Duration leaseFor, java.util.function.ToIntFunction<String> memberLimit) {
        this.leaseFor = leaseFor;
        this.memberLimit = memberLimit;
        this.waitingWorkers = waiting;
    }

    /** Whom to tell, with the member's name, that a task waits to be leased (the long polls of its workers). */
    public void onTaskWaiting(java.util.function.Consumer<String> listener) {
        this.taskWaiting = listener;
    }

    /** The adapter route's one step. */
    public void adapt(Exchange exchange) throws InterruptedException {
        String operation = exchange.getProperty("JobgateOperation", String.class);
        switch (operation == null ? "" : operation) {
            case "submit" -> submit(exchange);
            case "lookup" -> lookup(exchange);
            case "cancel" -> cancel(exchange);
            default -> throw new IllegalArgumentException("a pull member's adapter serves submit, lookup and cancel, not " + operation);
        }
    }

    private void submit(Exchange exchange) throws InterruptedException {
        String member = exchange.getProperty("JobgateProvider", String.class);
        java.time.Duration absent = absent(member);
        if (absent != null) {
            // No worker to render it: refused as a provider that is down refuses (a pool job moves to another member),
            // before any task exists, so none can render it later.
            exchange.setProperty("JobgateOutcome", "transient");
            exchange.setProperty("JobgateErrorMessage", "no worker of " + member + " seen within " + absent.toSeconds() + " s");
            return;
        }
        UUID jobId = UUID.fromString(exchange.getProperty("JobgateJobId", String.class));
        int attempt = exchange.getProperty("JobgateAttempt", Integer.class);
        // Opened before the task is written: its worker may end it before the insert returns here.
        try (HeldSubmits.Wait wait = held.open(jobId, attempt)) {
            WorkerTasks.Task task = write(exchange, member, jobId, attempt, wait);
            exchange.setProperty("JobgateProviderTask", task.taskId().toString());
            if (!task.status().open()) {
                answer(exchange, task, null); // a submit sent again, its task ended meanwhile
                return;
            }
            // As a provider's call waits for its answer: a worker that ends the task within the call's deadline
            // answers this submit; past it, the job waits on the task as on any asynchronous provider's.
            Long deadline = exchange.getProperty("JobgateDeadlineMillis", Long.class);
            java.util.Optional<HeldSubmits.Answer> answer = wait.await(java.time.Duration.ofMillis(deadline == null ? 0 : deadline));
            if (answer.isPresent()) {
                answer(exchange, answer.get().task(), answer.get().output());
            } else {
                exchange.setProperty("JobgateOutcome", "pending");
            }
        }
    }

    /**
     * Writes the attempt's task: leased at once to the longest-waiting poll of the member on this instance whose worker
     * may render it (its answer is the task, with no lease call of its own), else waiting to be leased, the member's
     * polls woken. The order tasks reach workers is then the order their jobs were started in: the dispatch's fair
     * round between tenants, as the lease call's own order is for tasks that waited.
     */
    private WorkerTasks.Task write(Exchange exchange, String member, UUID jobId, int attempt, HeldSubmits.Wait wait) {
        String envelope = exchange.getIn().getBody(String.class);
        String sourceKey = exchange.getProperty("JobgateSourceKey", String.class);
        String sourceMediaType = exchange.getProperty("JobgateSourceMediaType", String.class);
        String revision = exchange.getProperty("JobgateAdapterRevision", String.class);
        WaitingWorkers waiting = waitingWorkers;
        WaitingWorkers.Poll poll = waiting == null ? null : waiting.take(member, WorkerTasks.label(revision));
        if (poll == null) {
            WorkerTasks.Task task = tasks.submit(member, jobId, attempt, envelope, sourceKey, sourceMediaType, revision);
            if (task.status().open()) {
                taskWaiting.accept(member); // were it not visible yet, the long polls' periodic check finds it
            }
            return task;
        }
        boolean answered = false;
        try {
            WorkerTasks.Submitted written = tasks.submitLeased(member, jobId, attempt, envelope, sourceKey, sourceMediaType, revision,
                    poll.workerId(), leaseFor, memberLimit.applyAsInt(member));
            if (written.leased()) {
                wait.handed(written.task());
                seen.saw(member, poll.workerId(), "lease");
                poll.leased(LeaseEnvelope.answer(java.util.List.of(written.task()), objects));
                answered = true;
            } else if (written.task().status().open()) {
                taskWaiting.accept(member); // no room for another lease now: it waits, as any task
            }
            return written.task();
        } finally {
            if (!answered) {
                poll.giveBack(); // its lease call finds what there is to lease
            }
        }
    }

    private void lookup(Exchange exchange) {
        Optional<WorkerTasks.Task> found = task(exchange).or(() -> byAttempt(exchange));
        if (found.isEmpty()) {
            // No task for this attempt: its submit never wrote one, so a resubmit is safe.
            exchange.setProperty("JobgateOutcome", "absent");
            return;
        }
        WorkerTasks.Task task = found.get();
        // Found by its attempt, its submit's answer having never been recorded (the instance whose submit waited for it
        // stopped): the job adopts the task, whatever its worker did or does with it; never a second render.
        exchange.setProperty("JobgateProviderTask", task.taskId().toString());
        java.time.Duration absent = task.status() == WorkerTasks.Status.WAITING && task.leases() == 0 ? absent(task.provider()) : null;
        if (absent != null) {
            // Its workers are gone and none ever saw it: withdrawn, it fails as transient below (safe: no worker can
            // lease it now), and its job's next attempt goes where the rulebook sends it.
            task = tasks.withdrawUnleased(task.taskId(), absent).orElse(task);
        }
        answer(exchange, task, null);
    }

    /**
     * What the task says of its attempt, as the adapter contract's outcome: waiting or leased is {@code pending}, a
     * worker's complete {@code succeeded} with its output ({@code output}, else read from where the complete named it),
     * a worker's fail its category.
     */
    private void answer(Exchange exchange, WorkerTasks.Task task, byte[] output) {
        switch (task.status()) {
            case WAITING, LEASED -> exchange.setProperty("JobgateOutcome", "pending");
            case SUCCEEDED -> {
                exchange.setProperty("JobgateOutcome", "succeeded");
                exchange.setProperty("JobgateOutputBytes", output != null ? output : objects.read(task.outputKey()));
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
        task(exchange).or(() -> byAttempt(exchange)).ifPresent(task -> tasks.cancel(task.taskId()));
        exchange.setProperty("JobgateOutcome", "cancelled");
    }

    /**
     * Route step of {@code worker-ends-elsewhere}: a worker ended a task through another instance while the job was
     * still being submitted ({@code {job_id, attempt}}, from the topic {@code jobs.worker-ends}). A submit of this
     * instance waiting for that task answers with its end (the output read from where the complete stored it); any
     * other instance has nothing to do.
     */
    public void endedElsewhere(String body) {
        com.fasterxml.jackson.databind.JsonNode ended;
        UUID jobId;
        try {
            ended = io.jobgate.common.Json.MAPPER.readTree(body);
            jobId = UUID.fromString(ended.path("job_id").asText());
        } catch (Exception notOurs) {
            return; // not a worker's end (the topic is the gateway's own)
        }
        int attempt = ended.path("attempt").asInt();
        if (!held.awaited(jobId, attempt)) {
            return;
        }
        tasks.findByAttempt(jobId, attempt)
                .filter(task -> !task.status().open())
                .ifPresent(task -> held.handOver(new HeldSubmits.Answer(task, null)));
    }

    /** The task of the exchange's job and attempt, found by them (no task reference was recorded). */
    private Optional<WorkerTasks.Task> byAttempt(Exchange exchange) {
        String job = exchange.getProperty("JobgateJobId", String.class);
        Integer attempt = exchange.getProperty("JobgateAttempt", Integer.class);
        if (job == null || attempt == null) {
            return Optional.empty();
        }
        try {
            return tasks.findByAttempt(UUID.fromString(job), attempt);
        } catch (IllegalArgumentException notOurs) {
            return Optional.empty();
        }
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
}
