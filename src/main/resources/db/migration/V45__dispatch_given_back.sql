-- How many times a job's dispatch message was dead-lettered before any attempt started from it, and given back to the
-- outbox (relay/DeadLetters). A gateway killed with messages in its consumers' buffers can run a message's delivery
-- count up to the broker's limit without any worker ever seeing it (Artemis counts a delivery to a consumer whose
-- connection failed as made), so the first two dead letters of a job's dispatch send it out again under its slot; the
-- third fails it as dead_lettered, and a poison message is delivered fifteen times at most. A redrive starts it at 0.
ALTER TABLE jobs ADD COLUMN dispatch_given_back smallint NOT NULL DEFAULT 0;
