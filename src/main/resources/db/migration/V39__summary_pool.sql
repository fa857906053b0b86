-- The pool of summary providers a transcription job's summary may run in (docs/summaries.md), as it asked:
-- placed when the summary is ordered, like a client's pool job at admission. NULL: it named a provider, or
-- neither (its preset's pool, its kind's default pool, or the kind's default provider then).
ALTER TABLE job_summaries ADD COLUMN pool text;
