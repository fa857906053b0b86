-- Issue 66: the attempts of a pull member (a provider whose renders external workers do), waiting to be
-- leased over HTTP, leased under a token, and ended by the worker that holds it (complete or fail). The
-- member's adapter writes a task at submit and reads it at each lookup; the job waits in provider_pending
-- meanwhile, as for any async provider.
CREATE TABLE worker_tasks (
    task_id             uuid        PRIMARY KEY,
    provider            text        NOT NULL,
    job_id              uuid        NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    attempt             integer     NOT NULL,
    envelope            jsonb       NOT NULL,
    status              text        NOT NULL CHECK (status IN ('waiting', 'leased', 'succeeded', 'failed', 'cancelled')),
    lease_token         uuid,
    lease_expires_at    timestamptz,
    worker_id           text,
    leases              integer     NOT NULL DEFAULT 0,
    output_key          text,
    output_media_type   text,
    billed_units        numeric,
    billed_unit         text,
    error_category      text,
    error_message       text,
    retry_after_seconds integer,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    -- One task per attempt: a submit sent again (its reply lost) finds the task it wrote.
    UNIQUE (job_id, attempt)
);

-- What a lease round reads: a member's open tasks, oldest first; ended tasks never enter it.
CREATE INDEX worker_tasks_open ON worker_tasks (provider, created_at) WHERE status IN ('waiting', 'leased');
