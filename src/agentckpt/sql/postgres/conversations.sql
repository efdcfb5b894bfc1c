-- Named queries of the conversation API (agentckpt.conversation), PostgreSQL dialect.
-- Every statement on a run's rows filters on run_id (one partition or shard each).

-- name: conversation_heartbeat
-- The writer is alive: refresh the run's heartbeat (commits refresh it too).
UPDATE runs SET heartbeat_at = now()
WHERE run_id = %(run_id)s
RETURNING run_id, heartbeat_at;

-- name: conversation_orphans
-- Active conversations with no heartbeat for %(older_than)s seconds, stalest first.
SELECT run_id, agent_id, head_step, head_open, heartbeat_at, created_at, updated_at
FROM runs
WHERE kind = 'conversation' AND status = 'active'
  AND heartbeat_at < now() - make_interval(secs => %(older_than)s::float8)
ORDER BY heartbeat_at, run_id
LIMIT %(limit)s;

-- name: conversation_history
-- The archived segments of a conversation, in order.
SELECT seq, step, item_count, codec, payload, raw_bytes
FROM history
WHERE run_id = %(run_id)s AND seq < %(segments)s
ORDER BY seq;

-- name: conversation_history_seqs
-- Which archived segments from %(from_seq)s on are stored (to resend none twice).
SELECT seq FROM history WHERE run_id = %(run_id)s AND seq >= %(from_seq)s ORDER BY seq;

-- name: conversations_to_upgrade
-- Conversations whose head state has an older format version, by run id (keyset pages).
SELECT r.run_id, r.head_step, r.head_open, s.state_version
FROM runs r
JOIN steps s ON s.run_id = r.run_id AND s.step = r.head_step
WHERE r.kind = 'conversation'
  AND s.state_version < %(current)s
  AND (%(after)s::uuid IS NULL OR r.run_id > %(after)s::uuid)
ORDER BY r.run_id
LIMIT %(limit)s;

-- name: conversations_claim_orphans
-- Conversations of the given agents with a turn cut off (open head), no write or
-- heartbeat for idle seconds, and no live lease of a recovery worker (a writer holds
-- none: its heartbeat says it is alive). Each claim bumps the lease epoch, so the writer
-- presumed dead is fenced if it wakes up. SKIP LOCKED lets many workers poll at once.
WITH orphans AS (
    SELECT run_id FROM runs
    WHERE status = 'active'
      AND kind = 'conversation'
      AND head_open
      AND agent_id IN (SELECT jsonb_array_elements_text(%(agent_ids)s::jsonb))
      AND heartbeat_at < now() - make_interval(secs => %(idle)s)
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY heartbeat_at, run_id
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
RETURNING r.run_id, r.agent_id, r.lease_epoch;
