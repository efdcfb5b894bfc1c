-- The SQLite driver's own statements: migrations bookkeeping and the commit itself.
-- Only the driver (src/agentckpt/_backends/) runs them; the rooms above it use the store.

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    applied_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now'))
);

-- name: applied_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: record_migration
INSERT INTO schema_migrations (version, name) VALUES (:version, :name);

-- name: commit_guard
-- Matches only if the head is the one the writer read and, when fenced, the epoch is
-- current. The backend rolls back when it matches no row, so a refused commit writes nothing.
-- :now is the clock's time in strftime('%Y-%m-%dT%H:%M:%f', 'now')'s text, read by the
-- backend inside the transaction (SQLite's clock is this process's). :tenant is the
-- connection's tenant, what agentckpt_tenant() answers, bound: a call of that function is
-- a call into Python from inside the statement, which must take the GIL back first.
-- (The commit's other statements below bind both too.)
UPDATE runs SET
    head_step     = :step,
    head_version  = :write_version,
    head_open     = :is_open,
    snapshot_step = :snapshot_step,
    chain_bytes   = :chain_bytes,
    heartbeat_at  = :now,
    updated_at    = :now
WHERE run_id = :run_id AND tenant_id = :tenant
  AND head_step IS :expected_step
  AND head_version = :expected_version
  AND (:epoch IS NULL OR lease_epoch = :epoch);

-- get_metadata, set_metadata, insert_history: a commit's statements after its guard,
-- with :tenant bound as there.
-- name: get_metadata
SELECT metadata FROM runs WHERE run_id = :run_id AND tenant_id = :tenant;

-- name: set_metadata
UPDATE runs SET metadata = :metadata WHERE run_id = :run_id AND tenant_id = :tenant;

-- name: insert_history
INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes, tenant_id)
VALUES (:run_id, :seq, :step, :item_count, :codec, :payload, :raw_bytes, :tenant);

-- name: seal_step
UPDATE steps SET is_open = 0 WHERE run_id = :run_id AND tenant_id = :tenant AND step = :seal_step AND is_open;

-- name: insert_step
-- A new step, the commit's usual case: no RETURNING (SQLite fills an ephemeral table for
-- it), the row's timestamps are :now. A step that exists already fails its primary key,
-- and the backend runs upsert_step instead.
INSERT INTO steps (run_id, step, parent_step, kind, is_open, codec, payload, state_version,
                   write_version, raw_bytes, state_bytes, checksum, write_token, tenant_id,
                   created_at, updated_at)
VALUES (:run_id, :step, :parent_step, :kind, :is_open, :codec, :payload, :state_version,
        :write_version, :raw_bytes, :state_bytes, :checksum, :write_token, :tenant,
        :now, :now);

-- name: upsert_step
-- :now as in commit_guard; a rewritten open step keeps its created_at.
INSERT INTO steps (run_id, step, parent_step, kind, is_open, codec, payload, state_version,
                   write_version, raw_bytes, state_bytes, checksum, write_token, tenant_id,
                   created_at, updated_at)
VALUES (:run_id, :step, :parent_step, :kind, :is_open, :codec, :payload, :state_version,
        :write_version, :raw_bytes, :state_bytes, :checksum, :write_token, :tenant,
        :now, :now)
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = excluded.parent_step, kind = excluded.kind, is_open = excluded.is_open,
    codec = excluded.codec, payload = excluded.payload, state_version = excluded.state_version,
    write_version = excluded.write_version, raw_bytes = excluded.raw_bytes,
    state_bytes = excluded.state_bytes, checksum = excluded.checksum,
    write_token = excluded.write_token, updated_at = :now
WHERE steps.is_open AND steps.tenant_id = :tenant
RETURNING created_at, updated_at;
