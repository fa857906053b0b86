-- Evaluation (issue 14, docs/evaluation.md): what an evaluator read back from an invoice output —
-- the job's promoted one or a canary candidate's held one — scored field by field against its
-- manifest's expected answers. One row per (job, attempt); claimed before the evaluator runs.
CREATE TABLE evaluations (
    job_id          uuid        NOT NULL REFERENCES jobs (job_id),
    attempt         int         NOT NULL,
    provider        text        NOT NULL,
    revision        text        NOT NULL,
    preset_id       text        NOT NULL,
    preset_version  int         NOT NULL,
    held            boolean     NOT NULL,     -- a canary candidate's output, kept in quarantine
    claimed_by      text,
    claimed_at      timestamptz NOT NULL,
    evaluated_at    timestamptz,
    evaluator       text,
    fields_correct  int,
    fields_total    int,
    totals_correct  boolean,
    scores          jsonb,
    error           text,
    PRIMARY KEY (job_id, attempt)
);
CREATE INDEX evaluations_revision ON evaluations (revision, evaluated_at);
CREATE INDEX evaluations_time ON evaluations (evaluated_at);
-- Succeeded jobs by when they ended: the evaluator's scan for outputs not evaluated yet.
CREATE INDEX jobs_succeeded_at ON jobs (finalized_at) WHERE status = 'succeeded';
