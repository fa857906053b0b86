-- A provider's answer that arrives after its attempt's lease ran out is still the job's evidence
-- (issue 35, "late answers"): while no newer attempt has started, it finalizes the job. A job whose
-- expired lease went back to retry_wait (a provider that deduplicates resubmissions) may so succeed
-- from there, as it may from submission_unknown; the guard of that finalize is the attempt number.
INSERT INTO job_status_transitions (event, from_status, to_status) VALUES ('succeed', 'retry_wait', 'succeeded');
