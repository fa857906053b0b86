-- The summary of a call (issue 39, docs/summaries.md): a transcription job may ask for a summary of its
-- transcript. The summary is a second operation under the same job, run as a job of its own (kind
-- summary, parent_job_id naming the transcription), so it has its own attempts, lease, provider, price,
-- ledger debit and refund, and usage lines, and a failed summary never touches the transcript's job.
ALTER TABLE jobs ADD COLUMN parent_job_id uuid REFERENCES jobs (job_id);
CREATE UNIQUE INDEX jobs_one_summary ON jobs (parent_job_id) WHERE parent_job_id IS NOT NULL;

-- What a transcription job asked for, written with the job at admission, and what became of it: waiting
-- (until its transcript job ends), ordered (the summary job exists), skipped (the transcript did not
-- succeed: nothing to summarise), refused (admission refused the summary job; its code and message).
-- The transcription job's own row never changes once final; this row carries the summary's story.
CREATE TABLE job_summaries (
    job_id          uuid        PRIMARY KEY REFERENCES jobs (job_id),
    tenant_id       text        NOT NULL,
    preset_id       text        NOT NULL,
    preset_version  integer     NOT NULL,
    provider        text,
    inputs          jsonb       NOT NULL,
    state           text        NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'ordered', 'skipped', 'refused')),
    summary_job_id  uuid        REFERENCES jobs (job_id),
    refused_code    text,
    refused_message text,
    claimed_until   timestamptz,
    tries           integer     NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL,
    CHECK ((state = 'ordered') = (summary_job_id IS NOT NULL))
);
-- The orderer's scan: only the summaries still waiting (their transcription jobs open or just ended).
CREATE INDEX job_summaries_waiting ON job_summaries (job_id) WHERE state = 'waiting';

-- An operator's redrive gives a failed transcription job another try (V18): a summary skipped because the
-- transcript failed waits again, for the transcript the redrive may bring.
CREATE FUNCTION job_summaries_wait_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE job_summaries SET state = 'waiting', refused_code = NULL, refused_message = NULL, claimed_until = NULL,
                             updated_at = NEW.updated_at
     WHERE job_id = NEW.job_id AND state = 'skipped';
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_redriven_summary AFTER UPDATE OF status ON jobs
    FOR EACH ROW WHEN (OLD.status = 'failed' AND NEW.status = 'queued') EXECUTE FUNCTION job_summaries_wait_again();
