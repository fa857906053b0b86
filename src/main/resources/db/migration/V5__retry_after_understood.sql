-- Whether the worker could read a 429's Retry-After (null: no header). An unreadable header is
-- kept verbatim in retry_after; the retry then waited the provider's rate-limit backoff.
ALTER TABLE attempts ADD COLUMN retry_after_understood boolean;
