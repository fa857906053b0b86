-- Tenants' webhook endpoints and the deliveries to them (docs/webhooks.md).
--
-- An endpoint's secret is kept as it was issued (HMAC needs it; it is shown to the tenant once). A
-- rotation keeps the previous one until previous_secret_until: deliveries meanwhile carry a signature
-- by each, so a receiver still on the old secret verifies them.
CREATE TABLE webhook_endpoints (
    endpoint_id            uuid        PRIMARY KEY,
    tenant_id              text        NOT NULL REFERENCES tenant_accounts (tenant_id),
    url                    text        NOT NULL,
    event_types            text[]      NOT NULL,
    enabled                boolean     NOT NULL DEFAULT true,
    disabled_reason        text,
    secret                 text        NOT NULL,
    previous_secret        text,
    previous_secret_until  timestamptz,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    deleted_at             timestamptz
);
CREATE UNIQUE INDEX webhook_endpoints_url ON webhook_endpoints (tenant_id, url) WHERE deleted_at IS NULL;

-- A job may name one of its tenant's endpoints (its webhook_url): its deliveries go there only.
ALTER TABLE jobs ADD COLUMN webhook_endpoint_id uuid;

-- One row per status change an endpoint asked for. delivery_id is the webhook-id every attempt carries
-- (the receiver's dedupe key); seq orders a job's deliveries to one endpoint (the status event's id),
-- and only the first one not yet done is sent. The body is written once, at its first attempt, and
-- every retry sends those bytes again.
CREATE TABLE webhook_deliveries (
    delivery_id      text        PRIMARY KEY,
    endpoint_id      uuid        NOT NULL REFERENCES webhook_endpoints (endpoint_id),
    tenant_id        text        NOT NULL,
    job_id           uuid        NOT NULL,
    seq              bigint      NOT NULL,
    event_type       text        NOT NULL,
    occurred_at      timestamptz NOT NULL,
    state            text        NOT NULL CHECK (state IN ('pending', 'delivered', 'dead', 'dropped')),
    body             text,
    attempts         int         NOT NULL DEFAULT 0,
    -- attempts when it was last replayed or redriven: its retry schedule starts again from there
    retry_base       int         NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL,
    claimed_until    timestamptz,
    last_status      int,
    last_error       text,
    created_at       timestamptz NOT NULL,
    ended_at         timestamptz,
    UNIQUE (endpoint_id, seq)
);
-- The sender's round: each tenant's due deliveries (a job's first undone one per endpoint), and how
-- many of the tenant's are being sent now (claimed).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (tenant_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (tenant_id) WHERE state = 'pending' AND claimed_until IS NOT NULL;
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id, endpoint_id, seq);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
-- Retention: ended deliveries, oldest first (jobgate.retention.webhook-deliveries-hours).
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (ended_at) WHERE state <> 'pending';

CREATE TABLE webhook_delivery_attempts (
    delivery_id  text        NOT NULL REFERENCES webhook_deliveries (delivery_id) ON DELETE CASCADE,
    attempt      int         NOT NULL,
    started_at   timestamptz NOT NULL,
    duration_ms  bigint      NOT NULL,
    http_status  int,
    error        text,
    PRIMARY KEY (delivery_id, attempt)
);
