-- Canary adapter revisions (issue 14, docs/canary.md). One row per candidate revision ever seen, kept
-- after it stops or is promoted: attempts name their revision, and whether a revision was approved
-- decides whether its outputs may be promoted.
CREATE TABLE canaries (
    revision     text        PRIMARY KEY,  -- the candidate's identity (<label>@<hash>, kind-less)
    provider     text        NOT NULL,
    revisions    text[]      NOT NULL,     -- the per-kind revisions its attempts record
    status       text        NOT NULL CHECK (status IN ('running', 'stopped', 'promoted')),
    judged_from  timestamptz NOT NULL,     -- gates read attempts started from here (a restart moves it)
    gate         text,                     -- the gate that stopped it, or 'operator'
    reason       text,
    changed_by   text        NOT NULL,
    changed_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX canaries_provider ON canaries (provider, created_at DESC);

-- Every change of a canary, who made it and when; unpublished rows are the status topic's outbox.
CREATE TABLE canary_actions (
    action_id    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    revision     text        NOT NULL REFERENCES canaries (revision),
    provider     text        NOT NULL,
    action       text        NOT NULL CHECK (action IN ('started', 'stopped', 'promoted', 'restarted')),
    gate         text,
    reason       text,
    operator     text        NOT NULL,
    at           timestamptz NOT NULL,
    requeued     int         NOT NULL DEFAULT 0,
    published_at timestamptz
);
CREATE INDEX canary_actions_unpublished ON canary_actions (action_id) WHERE published_at IS NULL;

-- A candidate's checked output, kept in quarantine (never readable by a tenant): evaluation evidence.
ALTER TABLE attempts ADD COLUMN held_output jsonb;
