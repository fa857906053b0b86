-- Issue 66, the operators' view of external workers (docs/workers.md, "Operators").

-- The workers of each pull member that called the gateway: when first, when last and with which call. Written by
-- the worker protocol at most once per worker every few seconds (io.jobgate.workers.WorkersSeen), one upsert; a
-- worker not seen for a week is forgotten by retention.
CREATE TABLE workers_seen (
    provider      text        NOT NULL,
    worker_id     text        NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    last_call     text        NOT NULL CHECK (last_call IN ('lease', 'heartbeat', 'output', 'complete', 'fail')),
    PRIMARY KEY (provider, worker_id)
);

-- A worker's output (worker-outputs/<task_id> in the bucket) is removed once its task ended and its job is final
-- (io.jobgate.workers.WorkerOutputRetention): then it is set, whether an output was stored or not.
ALTER TABLE worker_tasks ADD COLUMN output_deleted_at timestamptz;

-- What retention reads: ended tasks whose output is not removed yet, oldest end first; a task leaves it once marked.
CREATE INDEX worker_tasks_outputs_to_remove ON worker_tasks (updated_at)
    WHERE output_deleted_at IS NULL AND status IN ('succeeded', 'failed', 'cancelled');

-- What the operators' view counts: a member's tasks that ended in the last hour, by how.
CREATE INDEX worker_tasks_ended ON worker_tasks (provider, updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
