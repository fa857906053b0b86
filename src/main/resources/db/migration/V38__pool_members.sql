-- A pool member's health and its operator's drain (docs/providers.md, "Cooldown, probe and drain"), one row per
-- pool and member once either has something to say, shared by every instance. Written off the hot path: by a
-- definite failure of a pool job's attempt, by the probe's claim and its outcome, and by an operator.
CREATE TABLE pool_members (
    pool              text        NOT NULL,
    member            text        NOT NULL,
    -- Definite failures counted in the window that began at window_started_at (none while the member cools).
    failures          integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    window_started_at timestamptz NOT NULL DEFAULT 'epoch',
    -- Set when the failures reached the member's threshold: no new attempt until then, then one probe; NULL again
    -- once the probe succeeded.
    cooling_until     timestamptz,
    -- The half-open probe: the one job whose attempt decides whether the member takes traffic again.
    probe_job_id      uuid,
    probe_started_at  timestamptz,
    -- An operator's drain: no new attempts on the member; its jobs finish. NULL: not drained.
    drained_at        timestamptz,
    drained_by        text,
    drained_reason    text,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (pool, member),
    CHECK ((probe_job_id IS NULL) = (probe_started_at IS NULL)),
    CHECK ((drained_at IS NULL) = (drained_by IS NULL))
);
