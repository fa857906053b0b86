-- The part an attempt's adapter revision plays (docs/canary.md): 'stable', whose answers are the job's, or
-- 'candidate', a canary's revision not promoted, whose outputs are held and whose failures are its own.
-- Written when an attempt opens (on the attempt and on its job), rewritten on the open jobs of a canary's
-- revisions when it is promoted, restarted or stopped; every flow bean reads it from the row, none asks the canary.
-- NULL: opened before this column; read as its revision's role now (job/RevisionRole.COLUMN).
ALTER TABLE jobs ADD COLUMN revision_role text CHECK (revision_role IN ('stable', 'candidate'));
ALTER TABLE attempts ADD COLUMN revision_role text CHECK (revision_role IN ('stable', 'candidate'));
