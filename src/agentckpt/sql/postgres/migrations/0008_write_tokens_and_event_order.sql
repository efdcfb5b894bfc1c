-- Correct under concurrency (issue 12).
-- steps.write_token: a random value each commit writes with its step. A commit that finds
-- its step already stored with the same content compares it: the same token is the
-- writer's own retry (idempotent), another one is a second writer that read the same head
-- (StaleHeadError, so neither operation is lost). Steps written before this are NULL.
-- events.seq: the run's events in the order they were emitted (one batch shares one
-- created_at, and event ids are random); older events are NULL and sort first.

ALTER TABLE steps ADD COLUMN write_token bytea;
ALTER TABLE events ADD COLUMN seq bigint;
CREATE INDEX events_run_seq ON events (run_id, seq);
