-- The job state machine's allowed status changes, the same table as io.jobgate.job.JobTransitions
-- (a test compares the two). Any other change of jobs.status is refused here, whoever writes it.
CREATE TABLE job_status_transitions (
    event       text NOT NULL,
    from_status text NOT NULL,
    to_status   text NOT NULL,
    PRIMARY KEY (event, from_status)
);
CREATE INDEX job_status_transitions_pair ON job_status_transitions (from_status, to_status);

INSERT INTO job_status_transitions (event, from_status, to_status) VALUES
    ('lease',      'queued',             'running'),
    ('lease',      'retry_wait',         'running'),
    ('submit',     'running',            'submitting'),
    ('retry',      'running',            'retry_wait'),
    ('retry',      'submitting',         'retry_wait'),
    ('resubmit',   'provider_pending',   'retry_wait'),
    ('resubmit',   'submission_unknown', 'retry_wait'),
    ('unknown',    'submitting',         'submission_unknown'),
    ('accepted',   'submitting',         'provider_pending'),
    ('task_found', 'submission_unknown', 'provider_pending'),
    ('succeed',    'submitting',         'succeeded'),
    ('succeed',    'provider_pending',   'succeeded'),
    ('succeed',    'submission_unknown', 'succeeded'),
    ('fail',       'queued',             'failed'),
    ('fail',       'running',            'failed'),
    ('fail',       'submitting',         'failed'),
    ('fail',       'provider_pending',   'failed'),
    ('fail',       'submission_unknown', 'failed'),
    ('fail',       'retry_wait',         'failed'),
    ('cancel',     'queued',             'cancelled'),
    ('cancel',     'running',            'cancelled'),
    ('cancel',     'submitting',         'cancelled'),
    ('cancel',     'provider_pending',   'cancelled'),
    ('cancel',     'submission_unknown', 'cancelled'),
    ('cancel',     'retry_wait',         'cancelled');

CREATE FUNCTION jobs_transition_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM job_status_transitions
                    WHERE from_status = OLD.status AND to_status = NEW.status) THEN
        RAISE EXCEPTION 'job % may not go from % to %', OLD.job_id, OLD.status, NEW.status
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER jobs_transition BEFORE UPDATE OF status ON jobs
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION jobs_transition_allowed();
