-- Retention (worker/Retention): published outbox events and webhook receipts are removed after a
-- grace period, in small batches, found through these indexes rather than by walking history.
-- Jobs, attempts and the ledger are evidence and are never removed.
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;
CREATE INDEX webhook_receipts_received_at ON webhook_receipts (received_at);
