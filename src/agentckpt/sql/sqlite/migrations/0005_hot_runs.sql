-- Every commit updates its run's row; indexes on columns that change on each commit
-- (updated_at, heartbeat_at) cost a write per index per commit. Keep only stable keys.

DROP INDEX runs_agent_updated;
DROP INDEX runs_status_heartbeat;
CREATE INDEX runs_agent ON runs (agent_id);
