-- Operator redrive (issue 14): a failed job gets a new attempt under its id. The one exception to
-- "a terminal job never changes again", made here and nowhere else: failed -> queued, clearing
-- finalized_at and counting one more redrive. Cancelled and succeeded jobs stay final.
ALTER TABLE jobs ADD COLUMN redrives integer NOT NULL DEFAULT 0 CHECK (redrives >= 0);

INSERT INTO job_status_transitions (event, from_status, to_status) VALUES ('redrive', 'failed', 'queued');

CREATE OR REPLACE FUNCTION jobs_final_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'failed' AND NEW.status = 'queued' AND NEW.finalized_at IS NULL
       AND NEW.redrives = OLD.redrives + 1 THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'job % is final (%) and cannot change', OLD.job_id, OLD.status
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

-- The ledger stays append-only and exact: a job has one debit and at most one refund per redrive
-- (0: as admitted). A redrive charges again what the last failure refunded, as a debit of its round.
ALTER TABLE ledger ADD COLUMN redrive integer NOT NULL DEFAULT 0 CHECK (redrive >= 0);
DROP INDEX ledger_one_per_job;
CREATE UNIQUE INDEX ledger_one_per_job ON ledger (job_id, entry_type, redrive) WHERE entry_type IN ('debit', 'refund');

-- Who redrove which job, when and why: the record an operator's action leaves.
CREATE TABLE job_redrives (
    job_id            uuid        NOT NULL REFERENCES jobs (job_id),
    redrive           integer     NOT NULL CHECK (redrive > 0),
    operator          text        NOT NULL,
    reason            text,
    forced            boolean     NOT NULL,
    previous_category text,
    previous_message  text,
    debited_micros    bigint      NOT NULL,
    redriven_at       timestamptz NOT NULL,
    PRIMARY KEY (job_id, redrive)
);
