-- Uploads retention (upload/UploadRetention): an upload no job has used for a while expires (new jobs
-- may not name it; the same bytes uploaded again revive it), and its source object is removed once
-- every upload of those bytes expired. The job keeps the source's digest and size.
ALTER TABLE uploads ADD COLUMN expired_at timestamptz, ADD COLUMN purged_at timestamptz;
-- Found through these, bounded by what is live or waiting for removal, never by walking history.
CREATE INDEX uploads_live_since ON uploads (created_at) WHERE expired_at IS NULL;
CREATE INDEX uploads_expiring ON uploads (expired_at) WHERE expired_at IS NOT NULL AND purged_at IS NULL;
CREATE INDEX uploads_object_key ON uploads (object_key);
CREATE INDEX jobs_upload ON jobs (upload_id) WHERE upload_id IS NOT NULL;
