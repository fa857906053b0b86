-- jobgate schema, part 3: worker leases, attempts (kept forever: the evidence for a postmortem),
-- and the provider gates shared by every gateway instance.

-- A lease is a worker's time-limited claim on a job; every write a worker makes is conditional on
-- the token it got. Only the sweeper ends an expired lease.
ALTER TABLE jobs ADD COLUMN lease_token uuid;
ALTER TABLE jobs ADD COLUMN lease_owner text;
ALTER TABLE jobs ADD COLUMN lease_expires_at timestamptz;
ALTER TABLE jobs ADD COLUMN next_attempt_at timestamptz;
ALTER TABLE jobs ADD COLUMN unparseable_streak integer NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN provider_request_id text;
ALTER TABLE jobs ADD COLUMN adapter_revision text;
-- What a successful attempt produced (output location, media type, bytes, digest).
ALTER TABLE jobs ADD COLUMN result jsonb;
ALTER TABLE jobs ADD CONSTRAINT jobs_lease_whole
    CHECK ((lease_token IS NULL) = (lease_expires_at IS NULL) AND (lease_token IS NULL) = (lease_owner IS NULL));
ALTER TABLE jobs ADD CONSTRAINT jobs_terminal_unleased CHECK (finalized_at IS NULL OR lease_token IS NULL);
CREATE INDEX jobs_lease_expiry ON jobs (lease_expires_at) WHERE lease_token IS NOT NULL;
CREATE INDEX jobs_lifetime ON jobs (expires_at) WHERE finalized_at IS NULL;
CREATE INDEX jobs_submitting ON jobs (provider) WHERE status = 'submitting';

CREATE TABLE attempts (
    job_id              uuid        NOT NULL REFERENCES jobs (job_id),
    attempt             integer     NOT NULL CHECK (attempt > 0),
    lease_token         uuid        NOT NULL,
    worker              text        NOT NULL,
    adapter             text        NOT NULL,
    adapter_revision    text        NOT NULL,
    started_at          timestamptz NOT NULL,
    ended_at            timestamptz,
    duration_ms         bigint,
    -- succeeded, pending, retry_wait, submission_unknown, failed, lease_expired
    outcome             text,
    http_status         integer,
    provider_request_id text,
    error_category      text,
    error_message       text,
    retry_after         text,
    next_attempt_at     timestamptz,
    -- First 2 KiB of a failed reply, for an operator; never sent back to clients.
    response_excerpt    text CHECK (length(response_excerpt) <= 2048),
    PRIMARY KEY (job_id, attempt)
);

CREATE FUNCTION attempts_forbid_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'attempts are evidence and are never deleted';
END $$;
CREATE TRIGGER attempts_keep BEFORE DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION attempts_forbid_delete();

-- One row per provider: a 429 closes the gate until its Retry-After for every job and every
-- instance; the row is also the lock that serialises the concurrency check of that provider.
CREATE TABLE provider_gates (
    provider      text        PRIMARY KEY,
    closed_until  timestamptz NOT NULL DEFAULT '-infinity',
    closed_reason text,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
