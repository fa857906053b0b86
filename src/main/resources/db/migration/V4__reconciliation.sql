-- jobgate schema, part 4: async providers, reconciliation, webhooks, and finality as a constraint.

-- The provider's task reference of an accepted async job, and when to ask the provider next.
ALTER TABLE jobs ADD COLUMN provider_task text;
ALTER TABLE jobs ADD COLUMN next_check_at timestamptz;
ALTER TABLE jobs ADD COLUMN checks integer NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX jobs_provider_task ON jobs (provider, provider_task) WHERE provider_task IS NOT NULL;
CREATE INDEX jobs_checks_due ON jobs (next_check_at)
    WHERE status IN ('provider_pending', 'submission_unknown') AND finalized_at IS NULL;

-- A terminal job never changes again: not by a second finalize, not by any other write.
CREATE FUNCTION jobs_final_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job % is final (%) and cannot change', OLD.job_id, OLD.status
        USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER jobs_final BEFORE UPDATE ON jobs
    FOR EACH ROW WHEN (OLD.finalized_at IS NOT NULL) EXECUTE FUNCTION jobs_final_is_final();

-- Webhook deliveries seen, by the provider's message id: a replay is refused, never applied twice.
CREATE TABLE webhook_receipts (
    provider    text        NOT NULL,
    webhook_id  text        NOT NULL,
    job_id      uuid        REFERENCES jobs (job_id),
    outcome     text,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, webhook_id)
);

-- What the provider billed for an attempt, per operation kind, when it says.
ALTER TABLE attempts ADD COLUMN billed_units numeric;
ALTER TABLE attempts ADD COLUMN billed_unit text;

-- Usage metered at admission, beside the money: a debit records what was requested (units and
-- unit: images, audio_minutes); a refund records what was given back.
ALTER TABLE ledger ADD COLUMN units numeric;
ALTER TABLE ledger ADD COLUMN unit text;
CREATE INDEX ledger_tenant_time ON ledger (tenant_id, created_at);
