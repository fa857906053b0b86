-- jobgate schema, part 1: tenants, uploads, jobs, the transactional outbox and the money ledger.
-- One dialect (PostgreSQL) everywhere. Every terminal transition sets finalized_at exactly once.

CREATE TABLE tenants (
    tenant_id        text        PRIMARY KEY,
    display_name     text        NOT NULL,
    api_key_sha256   text        NOT NULL UNIQUE,
    max_open_jobs    integer     NOT NULL CHECK (max_open_jobs > 0),
    max_running_jobs integer     NOT NULL CHECK (max_running_jobs > 0),
    max_queued_bytes bigint      NOT NULL CHECK (max_queued_bytes >= 0),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Admission reservations of a tenant and its balance. The balance is derived from the ledger by
-- the trigger below (never written by application code); the row doubles as the tenant's
-- admission lock, so a check-and-reserve is one conditional UPDATE.
CREATE TABLE tenant_accounts (
    tenant_id      text    PRIMARY KEY REFERENCES tenants (tenant_id),
    balance_micros bigint  NOT NULL DEFAULT 0,
    open_jobs      integer NOT NULL DEFAULT 0 CHECK (open_jobs >= 0),
    queued_bytes   bigint  NOT NULL DEFAULT 0 CHECK (queued_bytes >= 0)
);

-- Gateway-wide in-flight window (one row).
CREATE TABLE gateway_capacity (
    id        smallint PRIMARY KEY CHECK (id = 1),
    in_flight integer  NOT NULL DEFAULT 0 CHECK (in_flight >= 0)
);
INSERT INTO gateway_capacity (id, in_flight) VALUES (1, 0);

-- Preset files are immutable once seen: a changed file under an existing version fails start-up.
CREATE TABLE preset_versions (
    preset_id   text        NOT NULL,
    version     integer     NOT NULL,
    kind        text        NOT NULL,
    file_sha256 text        NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (preset_id, version)
);

CREATE TABLE uploads (
    upload_id   uuid        PRIMARY KEY,
    tenant_id   text        NOT NULL REFERENCES tenants (tenant_id),
    sha256      text        NOT NULL,
    bytes       bigint      NOT NULL CHECK (bytes > 0),
    media_type  text        NOT NULL,
    object_key  text        NOT NULL,
    duration_ms bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, sha256)
);

CREATE TABLE jobs (
    job_id               uuid        PRIMARY KEY,
    tenant_id            text        NOT NULL REFERENCES tenants (tenant_id),
    idempotency_key      text        NOT NULL,
    request_sha256       text        NOT NULL,
    status               text        NOT NULL CHECK (status IN ('queued', 'running', 'submitting',
                             'provider_pending', 'submission_unknown', 'retry_wait',
                             'succeeded', 'failed', 'cancelled')),
    preset_id            text        NOT NULL,
    preset_version       integer     NOT NULL,
    kind                 text        NOT NULL,
    aspect_class         text,
    provider             text        NOT NULL,
    inputs               jsonb       NOT NULL,
    upload_id            uuid        REFERENCES uploads (upload_id),
    source_key           text,
    source_sha256        text,
    source_bytes         bigint      NOT NULL DEFAULT 0,
    correlation_id       text,
    cost_micros          bigint      NOT NULL CHECK (cost_micros >= 0),
    max_attempts         integer     NOT NULL CHECK (max_attempts > 0),
    max_lifetime_seconds integer     NOT NULL CHECK (max_lifetime_seconds > 0),
    expires_at           timestamptz NOT NULL,
    attempts             integer     NOT NULL DEFAULT 0,
    error_category       text,
    error_message        text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    finalized_at         timestamptz,
    UNIQUE (tenant_id, idempotency_key),
    CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finalized_at IS NOT NULL))
);
CREATE INDEX jobs_tenant_listing ON jobs (tenant_id, job_id DESC);
CREATE INDEX jobs_open ON jobs (status) WHERE finalized_at IS NULL;

-- Transactional outbox: written with the job, relayed to Artemis later (at least once).
CREATE TABLE outbox (
    event_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       uuid        NOT NULL REFERENCES jobs (job_id),
    tenant_id    text        NOT NULL,
    event_type   text        NOT NULL,
    available_at timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_due ON outbox (available_at, event_id) WHERE published_at IS NULL;

-- Append-only money ledger. One debit and at most one refund per job, enforced here.
CREATE TABLE ledger (
    entry_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     text        NOT NULL REFERENCES tenants (tenant_id),
    job_id        uuid        REFERENCES jobs (job_id),
    entry_type    text        NOT NULL CHECK (entry_type IN ('grant', 'debit', 'refund', 'adjustment')),
    amount_micros bigint      NOT NULL,
    reference     text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (entry_type <> 'debit' OR (amount_micros <= 0 AND job_id IS NOT NULL)),
    CHECK (entry_type <> 'refund' OR (amount_micros >= 0 AND job_id IS NOT NULL))
);
CREATE UNIQUE INDEX ledger_one_per_job ON ledger (job_id, entry_type) WHERE entry_type IN ('debit', 'refund');
CREATE UNIQUE INDEX ledger_grant_reference ON ledger (tenant_id, reference) WHERE entry_type = 'grant';

CREATE FUNCTION ledger_forbid_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger is append-only';
END $$;
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger
    FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();

CREATE FUNCTION ledger_apply_to_balance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tenant_accounts SET balance_micros = balance_micros + NEW.amount_micros
     WHERE tenant_id = NEW.tenant_id;
    RETURN NULL;
END $$;
CREATE TRIGGER ledger_balance AFTER INSERT ON ledger
    FOR EACH ROW EXECUTE FUNCTION ledger_apply_to_balance();
