-- Named queries of the conversation API (agentckpt.conversation), SQLite dialect.
-- Times come from SQLite's clock: strftime('%Y-%m-%dT%H:%M:%f', 'now') is UTC.

-- name: conversation_heartbeat
-- The writer is alive: refresh the run's heartbeat (commits refresh it too).
UPDATE runs SET heartbeat_at = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
RETURNING run_id, heartbeat_at;

-- name: conversation_orphans
-- Active conversations with no heartbeat for :older_than seconds, stalest first.
SELECT run_id, agent_id, head_step, head_open, heartbeat_at, created_at, updated_at
FROM runs
WHERE tenant_id = agentckpt_tenant() AND kind = 'conversation' AND status = 'active'
  AND heartbeat_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :older_than || ' seconds')
ORDER BY heartbeat_at, run_id
LIMIT :limit;

-- name: conversation_history
-- The archived segments of a conversation, in order.
SELECT seq, step, item_count, codec, payload, raw_bytes
FROM history
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND seq < :segments
ORDER BY seq;

-- name: conversation_history_seqs
-- Which archived segments from :from_seq on are stored (to resend none twice).
SELECT seq FROM history WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND seq >= :from_seq ORDER BY seq;

-- name: conversations_to_upgrade
-- Conversations whose head state has an older format version, by run id (keyset pages).
SELECT r.run_id, r.head_step, r.head_open, s.state_version
FROM runs r
JOIN steps s ON s.run_id = r.run_id AND s.step = r.head_step
WHERE r.tenant_id = agentckpt_tenant()
  AND r.kind = 'conversation'
  AND s.state_version < :current
  AND (:after IS NULL OR r.run_id > :after)
ORDER BY r.run_id
LIMIT :limit;

-- name: conversations_claim_orphans
-- See the PostgreSQL query; BEGIN IMMEDIATE makes this UPDATE the only writer while it runs.
UPDATE runs SET
    lease_owner      = :owner,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', '+' || :ttl || ' seconds'),
    heartbeat_at     = strftime('%Y-%m-%dT%H:%M:%f', 'now')
WHERE run_id IN (
    SELECT run_id FROM runs
    WHERE tenant_id = agentckpt_tenant()
      AND status = 'active'
      AND kind = 'conversation'
      AND head_open
      AND agent_id IN (SELECT value FROM json_each(:agent_ids))
      AND heartbeat_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :idle || ' seconds')
      AND (lease_owner IS NULL OR lease_expires_at IS NULL
           OR lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now'))
    ORDER BY heartbeat_at, run_id
    LIMIT :limit)
RETURNING run_id, agent_id, lease_epoch;
