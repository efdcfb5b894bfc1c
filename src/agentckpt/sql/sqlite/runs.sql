-- Named queries of the long-run loop (agentckpt.runs): leases, recovery, effects, the
-- audit log and blob garbage collection. Every write runs inside BEGIN IMMEDIATE (the
-- backend's transaction), so a conditional UPDATE here cannot race another writer.
-- List parameters (agent ids, digests) arrive as JSON text.

-- name: runs_acquire_lease
UPDATE runs SET
    lease_owner      = :owner,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', '+' || :ttl || ' seconds'),
    heartbeat_at     = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND (lease_owner IS NULL OR lease_owner = :owner
       OR lease_expires_at IS NULL
       OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now'))
RETURNING lease_owner, lease_epoch, lease_expires_at;

-- name: runs_lease_holder
SELECT lease_owner, lease_epoch, lease_expires_at, status FROM runs
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant();

-- name: runs_renew_lease
UPDATE runs SET
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', '+' || :ttl || ' seconds'),
    heartbeat_at     = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND lease_owner = :owner AND lease_epoch = :epoch
RETURNING lease_expires_at;

-- name: runs_release_lease
UPDATE runs SET lease_owner = NULL,
       lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND lease_owner = :owner AND lease_epoch = :epoch
RETURNING run_id;

-- name: runs_finish
UPDATE runs SET
    status           = :status,
    error            = :error,
    lease_owner      = NULL,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now'),
    updated_at       = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND lease_epoch = :epoch
RETURNING run_id;

-- name: runs_claim_orphans
-- SQLite has no SKIP LOCKED; BEGIN IMMEDIATE makes this conditional UPDATE the only
-- writer while it runs, so two workers never claim the same run.
UPDATE runs SET
    lease_owner      = :owner,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', '+' || :ttl || ' seconds'),
    heartbeat_at     = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id IN (
    SELECT run_id FROM runs
    WHERE tenant_id = agentckpt_tenant()
      AND status = 'active'
      AND kind = :kind
      AND agent_id IN (SELECT value FROM json_each(:agent_ids))
      AND lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now')
    ORDER BY lease_expires_at, run_id
    LIMIT :limit)
RETURNING run_id, lease_owner, lease_epoch, lease_expires_at;

-- name: runs_get_effect
SELECT codec, payload FROM effects
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND step = :step AND key = :key;

-- name: runs_insert_effect
INSERT INTO effects (run_id, step, key, codec, payload, tenant_id)
VALUES (:run_id, :step, :key, :codec, :payload, agentckpt_tenant())
ON CONFLICT (run_id, step, key) DO NOTHING;

-- name: runs_prune_effects
DELETE FROM effects WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND step < :below;

-- name: runs_insert_event
-- seq: the run's events in the order written (see the PostgreSQL query).
INSERT INTO events (run_id, event_id, step, kind, codec, payload, seq, tenant_id)
SELECT :run_id, :event_id, :step, :kind, :codec, :payload, coalesce(max(seq), 0) + 1,
       agentckpt_tenant()
FROM events WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
ON CONFLICT (run_id, event_id) DO NOTHING;

-- name: runs_list_events
SELECT event_id, step, kind, codec, payload, created_at FROM events
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
ORDER BY seq NULLS FIRST, created_at, step NULLS FIRST, event_id;

-- name: runs_gc_run_page
SELECT run_id FROM runs
WHERE tenant_id = agentckpt_tenant() AND (:after IS NULL OR run_id > :after)
ORDER BY run_id
LIMIT :limit;

-- name: runs_gc_run_payloads
SELECT r.head_step, r.head_version, s.step, s.kind, s.codec, s.payload
FROM runs r
LEFT JOIN steps s ON s.run_id = r.run_id
WHERE r.run_id = :run_id AND r.tenant_id = agentckpt_tenant()
ORDER BY s.step;

-- name: runs_gc_delete_blobs
-- Runs inside BEGIN IMMEDIATE: no commit can land between the head check and the delete.
DELETE FROM blobs
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND EXISTS (SELECT 1 FROM runs WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
              AND head_step IS :head_step AND head_version = :head_version)
  AND created_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :grace || ' seconds')
  AND digest NOT IN (SELECT value FROM json_each(:keep))
RETURNING digest, length(data) AS stored_bytes;
