-- START (io.jobgate.job.JobTransitions): a worker that already holds the provider's slot takes the
-- lease and starts the call as one row version of the job, queued or retry_wait straight to
-- submitting (LEASE then SUBMIT, through running, stays for the starts that must look at the job
-- leased first).
INSERT INTO job_status_transitions (event, from_status, to_status) VALUES
    ('start', 'queued',     'submitting'),
    ('start', 'retry_wait', 'submitting');
