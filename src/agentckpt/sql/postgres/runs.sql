-- Named queries of the long-run loop (agentckpt.runs): leases, recovery, effects, the
-- audit log and blob garbage collection. Times come from now(), the database clock.
-- List parameters (agent ids, digests) arrive as JSON text, as on SQLite.

-- name: runs_acquire_lease
-- Take the lease if nobody holds a live one (or this owner already does). The epoch goes
-- up on every grant, which fences out any earlier holder that is still running.
UPDATE runs SET
    lease_owner      = %(owner)s,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = now() + make_interval(secs => %(ttl)s),
    heartbeat_at     = now()
WHERE run_id = %(run_id)s
  AND (lease_owner IS NULL OR lease_owner = %(owner)s
       OR lease_expires_at IS NULL OR lease_expires_at <= now())
RETURNING lease_owner, lease_epoch, lease_expires_at;

-- name: runs_lease_holder
SELECT lease_owner, lease_epoch, lease_expires_at, status FROM runs
WHERE run_id = %(run_id)s;

-- name: runs_renew_lease
-- Only the holder of this epoch renews; no row back means the lease was taken over.
UPDATE runs SET
    lease_expires_at = now() + make_interval(secs => %(ttl)s),
    heartbeat_at     = now()
WHERE run_id = %(run_id)s AND lease_owner = %(owner)s AND lease_epoch = %(epoch)s
RETURNING lease_expires_at;

-- name: runs_release_lease
-- Expire the lease now (not NULL): an active run nobody holds is an orphan that a
-- recovery worker may claim.
UPDATE runs SET lease_owner = NULL, lease_expires_at = now()
WHERE run_id = %(run_id)s AND lease_owner = %(owner)s AND lease_epoch = %(epoch)s
RETURNING run_id;

-- name: runs_finish
-- Set the final status (completed, failed) and release the lease, fenced by the epoch:
-- a stale owner cannot mark a run that another worker now owns.
UPDATE runs SET
    status           = %(status)s,
    error            = %(error)s,
    lease_owner      = NULL,
    lease_expires_at = now(),
    updated_at       = now()
WHERE run_id = %(run_id)s AND lease_epoch = %(epoch)s
RETURNING run_id;

-- name: runs_claim_orphans
-- Active runs of the given agents whose lease expired, oldest expiry first. SKIP LOCKED
-- lets many recovery workers poll at once without waiting on each other's claims.
WITH orphans AS (
    SELECT run_id FROM runs
    WHERE status = 'active'
      AND kind = %(kind)s
      AND agent_id IN (SELECT jsonb_array_elements_text(%(agent_ids)s::jsonb))
      AND lease_expires_at < now()
    ORDER BY lease_expires_at, run_id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE runs r SET
    lease_owner      = %(owner)s,
    lease_epoch      = r.lease_epoch + 1,
    lease_expires_at = now() + make_interval(secs => %(ttl)s),
    heartbeat_at     = now()
FROM orphans o
WHERE r.run_id = o.run_id
RETURNING r.run_id, r.lease_owner, r.lease_epoch, r.lease_expires_at;

-- name: runs_get_effect
SELECT codec, payload FROM effects
WHERE run_id = %(run_id)s AND step = %(step)s AND key = %(key)s;

-- name: runs_insert_effect
-- The first recorded result wins; the caller reads back whichever that is.
INSERT INTO effects (run_id, step, key, codec, payload)
VALUES (%(run_id)s, %(step)s, %(key)s, %(codec)s, %(payload)s)
ON CONFLICT (run_id, step, key) DO NOTHING;

-- name: runs_prune_effects
DELETE FROM effects WHERE run_id = %(run_id)s AND step < %(below)s;

-- name: runs_insert_event
-- seq numbers the run's events in the order they are written (the log writes them in
-- emission order): one batch shares one created_at, and event ids are random.
INSERT INTO events (run_id, event_id, step, kind, codec, payload, seq)
SELECT %(run_id)s::uuid, %(event_id)s::uuid, %(step)s::bigint, %(kind)s::text,
       %(codec)s::text, %(payload)s::bytea, coalesce(max(seq), 0) + 1
FROM events WHERE run_id = %(run_id)s::uuid
ON CONFLICT (run_id, event_id) DO NOTHING;

-- name: runs_list_events
SELECT event_id, step, kind, codec, payload, created_at FROM events
WHERE run_id = %(run_id)s
ORDER BY seq NULLS FIRST, created_at, step NULLS FIRST, event_id;

-- name: runs_gc_run_page
SELECT run_id FROM runs
WHERE %(after)s::uuid IS NULL OR run_id > %(after)s::uuid
ORDER BY run_id
LIMIT %(limit)s;

-- name: runs_gc_run_payloads
-- The run's head and every kept step's payload, read in one snapshot.
SELECT r.head_step, r.head_version, s.step, s.kind, s.codec, s.payload
FROM runs r
LEFT JOIN steps s ON s.run_id = r.run_id
WHERE r.run_id = %(run_id)s
ORDER BY s.step;

-- name: runs_gc_delete_blobs
-- Delete the run's unreferenced blob rows older than the grace period, but only if the
-- run's head is still the one whose steps were scanned. FOR UPDATE serializes this with
-- a commit in flight: after that commit the head differs and nothing is deleted.
WITH guard AS (
    SELECT run_id FROM runs
    WHERE run_id = %(run_id)s
      AND head_step IS NOT DISTINCT FROM %(head_step)s::bigint
      AND head_version = %(head_version)s
    FOR UPDATE
)
DELETE FROM blobs b
WHERE b.run_id = %(run_id)s
  AND EXISTS (SELECT 1 FROM guard)
  AND b.created_at <= now() - make_interval(secs => %(grace)s)
  AND b.digest NOT IN (SELECT jsonb_array_elements_text(%(keep)s::jsonb))
RETURNING b.digest, length(b.data) AS stored_bytes;
