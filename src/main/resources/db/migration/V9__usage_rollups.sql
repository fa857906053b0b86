-- Usage from rollups (api/UsageApi): per tenant, UTC day, provider, kind and unit, exact to the
-- micro-unit, so a usage report costs what the days it spans cost, not what the history costs.
-- Raw rows stay for audit. Each ledger entry (debit, refund) and each change of an attempt's billed
-- units leaves a row in a pending queue, in the writer's own transaction (an insert: no hot row);
-- the roll-up step (usage/UsageRollups) moves pending rows into the day rows, deleting them in the
-- same statement, so a crash can neither skip nor count one twice. Reports add the pending tail.

CREATE TABLE usage_daily (
    tenant_id       text    NOT NULL,
    day             date    NOT NULL,
    provider        text    NOT NULL,
    kind            text    NOT NULL,
    unit            text    NOT NULL,
    jobs            bigint  NOT NULL,
    units           numeric NOT NULL,
    debited_micros  bigint  NOT NULL,
    refunded_micros bigint  NOT NULL,
    PRIMARY KEY (tenant_id, day, provider, kind, unit)
);

CREATE TABLE usage_pending (
    entry_id bigint PRIMARY KEY REFERENCES ledger (entry_id)
);

CREATE FUNCTION ledger_queue_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_pending (entry_id) VALUES (NEW.entry_id);
    RETURN NULL;
END $$;
CREATE TRIGGER ledger_usage AFTER INSERT ON ledger
    FOR EACH ROW WHEN (NEW.entry_type IN ('debit', 'refund')) EXECUTE FUNCTION ledger_queue_usage();

CREATE TABLE billing_daily (
    tenant_id text    NOT NULL,
    day       date    NOT NULL,
    provider  text    NOT NULL,
    kind      text    NOT NULL,
    unit      text    NOT NULL,
    attempts  bigint  NOT NULL,
    units     numeric NOT NULL,
    PRIMARY KEY (tenant_id, day, provider, kind, unit)
);

-- A change of an attempt's billed units as a delta: the old value out, the new one in.
CREATE TABLE billing_pending (
    pending_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      text        NOT NULL,
    started_at     timestamptz NOT NULL,
    provider       text        NOT NULL,
    kind           text        NOT NULL,
    unit           text        NOT NULL,
    attempts_delta integer     NOT NULL,
    units_delta    numeric     NOT NULL
);
CREATE INDEX billing_pending_tenant ON billing_pending (tenant_id, started_at);

CREATE FUNCTION attempts_queue_billing() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    job_tenant text;
    job_kind   text;
BEGIN
    SELECT tenant_id, kind INTO job_tenant, job_kind FROM jobs WHERE job_id = NEW.job_id;
    IF OLD.billed_units IS NOT NULL THEN
        INSERT INTO billing_pending (tenant_id, started_at, provider, kind, unit, attempts_delta, units_delta)
        VALUES (job_tenant, OLD.started_at, OLD.adapter, job_kind, coalesce(OLD.billed_unit, ''), -1, -OLD.billed_units);
    END IF;
    IF NEW.billed_units IS NOT NULL THEN
        INSERT INTO billing_pending (tenant_id, started_at, provider, kind, unit, attempts_delta, units_delta)
        VALUES (job_tenant, NEW.started_at, NEW.adapter, job_kind, coalesce(NEW.billed_unit, ''), 1, NEW.billed_units);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER attempts_billing AFTER UPDATE OF billed_units, billed_unit ON attempts
    FOR EACH ROW WHEN (OLD.billed_units IS DISTINCT FROM NEW.billed_units OR OLD.billed_unit IS DISTINCT FROM NEW.billed_unit)
    EXECUTE FUNCTION attempts_queue_billing();

-- What existed before the rollups: rolled up once, here.
INSERT INTO usage_pending (entry_id) SELECT entry_id FROM ledger WHERE entry_type IN ('debit', 'refund');
INSERT INTO billing_pending (tenant_id, started_at, provider, kind, unit, attempts_delta, units_delta)
SELECT j.tenant_id, a.started_at, a.adapter, j.kind, coalesce(a.billed_unit, ''), 1, a.billed_units
  FROM attempts a JOIN jobs j USING (job_id) WHERE a.billed_units IS NOT NULL;

-- The partial days at a report's edges are read raw: the ledger by tenant and time (ledger_tenant_time,
-- V4), billed attempts by time.
CREATE INDEX attempts_billed_time ON attempts (started_at) WHERE billed_units IS NOT NULL;
