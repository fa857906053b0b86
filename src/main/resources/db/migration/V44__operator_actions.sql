-- What operators did through the console (docs/console.md, "Actions"): each action with who did it and why, what it
-- acted on and what it changed, kept for the record (a job's page lists its own). Never on the hot path.
CREATE TABLE operator_actions (
    action_id  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action     text        NOT NULL CHECK (action IN ('cancel', 'redrive', 'reconcile', 'redrive_deliveries',
                                                       'canary_stop', 'canary_promote', 'canary_restart')),
    job_id     uuid,
    target     text,
    operator   text        NOT NULL CHECK (length(operator) BETWEEN 1 AND 100),
    reason     text        CHECK (length(reason) <= 500),
    outcome    text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operator_actions_job ON operator_actions (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX operator_actions_at ON operator_actions (at);
