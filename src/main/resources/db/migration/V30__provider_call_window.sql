-- Each provider's share of the dispatch window: jobs dispatched and not yet past their call
-- (queued or retry_wait with a dispatch slot, running, submitting). The relay dispatches a
-- provider's jobs only while this count is below the provider's max-concurrency, so a job is not
-- published to a worker that can only find the provider full: before, every dispatch beyond the
-- provider's free slots came back after gate-full-delay (500 ms) and went round again (relay claim,
-- JMS message, worker transaction, requeue), 2.2 such rounds per job with a 10 s provider at 400
-- calls (bench --only inflight). The same shape as dispatch_window (V2, V10): row 0 of a provider
-- holds what relay rounds took (only the relay, one round at a time, locks it); rows 1..16 what
-- releases gave back, each a releasing thread's own (JobTransitions.releaseShard), so a release
-- never waits on the relay or on another release's commit.
CREATE TABLE provider_window (
    provider text   NOT NULL,
    shard    int    NOT NULL CHECK (shard BETWEEN 0 AND 16),
    running  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (provider, shard),
    CHECK (shard <> 0 OR running >= 0)
);

-- The jobs dispatched and before or in their call now (an upgrade mid-run), so the limit holds across it.
INSERT INTO provider_window (provider, shard, running)
SELECT provider, 0, count(*) FROM jobs
 WHERE dispatched_at IS NOT NULL AND status IN ('queued', 'retry_wait', 'running', 'submitting')
 GROUP BY provider;
