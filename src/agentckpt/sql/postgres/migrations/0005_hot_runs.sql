-- Every commit updates its run's row (head, chain, heartbeat, updated_at). An index on a
-- column that changes on each commit makes every such update write to every index of the
-- table and leave a dead row for VACUUM. Without them, and with room left on each page,
-- the update is a heap-only (HOT) update that PostgreSQL cleans up on the page itself.

DROP INDEX runs_agent_updated;
DROP INDEX runs_status_heartbeat;
CREATE INDEX runs_agent ON runs (agent_id);
ALTER TABLE runs SET (fillfactor = 70);
