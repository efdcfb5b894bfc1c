-- Correct under concurrency (issue 12); see the PostgreSQL migration 0008 for the why.

ALTER TABLE steps ADD COLUMN write_token BLOB;
ALTER TABLE events ADD COLUMN seq INTEGER;
CREATE INDEX events_run_seq ON events (run_id, seq);
