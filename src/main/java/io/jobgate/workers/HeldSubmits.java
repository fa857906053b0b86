package io.jobgate.workers;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The submits of this instance that wait for their task's worker (docs/workers.md, "A submit waits"): a pull member's
 * submit writes its task and waits, as a call to a provider waits for its answer, up to the member's
 * {@code call-deadline-ms}. When the worker's complete or fail reaches this instance meanwhile, it is handed here, and
 * the submit answers with it: the job takes the same path as a provider's synchronous answer (its output checked,
 * promoted and recorded under the attempt's lease), with no pending state, lookup or second read of the output. A
 * submit whose wait ran out answers {@code pending}; its task's end then reaches the job as a lookup's would. A
 * worker's end that reached another instance is told to every instance over the topic {@code jobs.worker-ends}
 * ({@link PullAdapter#endedElsewhere}).
 *
 * <p>Exactly one side ends each wait: a hand-over takes the wait out of the map before it completes it, and a wait
 * that ran out takes itself out only if no hand-over took it first (then it takes the hand-over's answer).
 */
public final class HeldSubmits {

    /** A task's end as its worker reported it: the task as ended, and its output's bytes when the call had them. */
    public record Answer(WorkerTasks.Task task, byte[] output) {
    }

    private record Key(UUID jobId, int attempt) {
    }

    private final ConcurrentHashMap<Key, CompletableFuture<Answer>> waiting = new ConcurrentHashMap<>();
    /** The tasks of the waiting submits that were handed to a worker's poll as they were written, as written. */
    private final ConcurrentHashMap<UUID, WorkerTasks.Task> handed = new ConcurrentHashMap<>();

    /** One submit's wait, opened before its task is written (a worker may end it before the insert returns). */
    public final class Wait implements AutoCloseable {
        private final Key key;
        private final CompletableFuture<Answer> answer = new CompletableFuture<>();
        private volatile UUID handedTask;

        /** Its task was leased to a waiting poll as it was written: the worker's calls find it here while the submit waits. */
        public void handed(WorkerTasks.Task task) {
            handedTask = task.taskId();
            handed.put(task.taskId(), task);
        }

        private Wait(Key key) {
            this.key = key;
        }

        /** The worker's answer, if one came within {@code atMost}. */
        public Optional<Answer> await(Duration atMost) throws InterruptedException {
            try {
                return Optional.of(answer.get(Math.max(0, atMost.toMillis()), TimeUnit.MILLISECONDS));
            } catch (TimeoutException ranOut) {
                if (waiting.remove(key, answer)) {
                    return Optional.empty();
                }
                return Optional.of(answer.join()); // a hand-over took it in the meantime: its answer is on its way
            } catch (ExecutionException e) {
                throw new IllegalStateException(e.getCause());
            }
        }

        @Override
        public void close() {
            waiting.remove(key, answer);
            if (handedTask != null) {
                handed.remove(handedTask);
            }
        }
    }

    /** Opens the wait of attempt {@code attempt} of {@code jobId}; a wait already open for it (a submit sent again) is replaced. */
    public Wait open(UUID jobId, int attempt) {
        Wait wait = new Wait(new Key(jobId, attempt));
        waiting.put(wait.key, wait.answer);
        return wait;
    }

    /** Hands a task's end to the submit waiting for it here: false when none does (another instance's, or its wait ran out). */
    public boolean handOver(Answer answer) {
        CompletableFuture<Answer> wait = waiting.remove(new Key(answer.task().jobId(), answer.task().attempt()));
        return wait != null && wait.complete(answer);
    }

    /**
     * The task as its submit wrote it here, leased to a waiting poll, while that submit waits: what a worker's call
     * would otherwise read first. A stale copy is harmless: every write under a token is conditional on the stored
     * task, and a refused one reads it.
     */
    public Optional<WorkerTasks.Task> handed(UUID taskId) {
        return Optional.ofNullable(handed.get(taskId));
    }

    /** Whether a submit waits here for the task's end (its output's bytes are then worth reading in the worker's call). */
    public boolean awaited(WorkerTasks.Task task) {
        return awaited(task.jobId(), task.attempt());
    }

    /** Whether a submit of attempt {@code attempt} of {@code jobId} waits here. */
    public boolean awaited(UUID jobId, int attempt) {
        return waiting.containsKey(new Key(jobId, attempt));
    }
}
