-- Named queries of the command line and the web inspector (agentckpt.cli, .inspector).
-- Read-mostly: listings with sizes, storage statistics, durability settings, and the
-- raw rows that `agentckpt export` writes and `agentckpt import` recreates exactly.

-- name: ops_run_listing
-- Runs with their row counts and stored bytes; every filter is optional (NULL).
SELECT r.run_id, r.kind, r.agent_id, r.status, r.head_step, r.head_open, r.snapshot_step,
       r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at, r.parent_run_id,
       r.parent_step, r.error, length(r.config) AS config_bytes,
       (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id) AS step_rows,
       (SELECT coalesce(sum(length(s.payload)), 0)
          FROM steps s WHERE s.run_id = r.run_id) AS step_bytes,
       (SELECT count(*) FROM blobs b WHERE b.run_id = r.run_id) AS blob_rows,
       (SELECT coalesce(sum(length(b.data)), 0)
          FROM blobs b WHERE b.run_id = r.run_id) AS blob_bytes,
       (SELECT count(*) FROM history h WHERE h.run_id = r.run_id) AS history_rows,
       (SELECT coalesce(sum(length(h.payload)), 0)
          FROM history h WHERE h.run_id = r.run_id) AS history_bytes,
       (SELECT count(*) FROM effects e WHERE e.run_id = r.run_id) AS effect_rows,
       (SELECT count(*) FROM events v WHERE v.run_id = r.run_id) AS event_rows,
       (SELECT count(*) FROM run_threads t WHERE t.run_id = r.run_id)
       + (SELECT count(*) FROM step_index i WHERE i.run_id = r.run_id)
       + (SELECT count(*) FROM step_writes w WHERE w.run_id = r.run_id) AS framework_rows
FROM runs r
WHERE r.tenant_id = agentckpt_tenant()
  AND (:run_id IS NULL OR r.run_id = :run_id)
  AND (:agent_id IS NULL OR r.agent_id = :agent_id)
  AND (:kind IS NULL OR r.kind = :kind)
  AND (:status IS NULL OR r.status = :status)
  AND (:idle_seconds IS NULL
       OR r.updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :idle_seconds || ' seconds'))
ORDER BY r.updated_at DESC, r.run_id
LIMIT coalesce(:limit, -1);

-- name: ops_table_sizes
-- Rows and payload bytes of each table, of the store's tenant.
SELECT 'runs' AS table_name, count(*) AS row_count,
       coalesce(sum(length(config)), 0) AS payload_bytes FROM runs WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'steps', count(*), coalesce(sum(length(payload)), 0) FROM steps WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'blobs', count(*), coalesce(sum(length(data)), 0) FROM blobs WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'effects', count(*), coalesce(sum(length(payload)), 0) FROM effects WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'history', count(*), coalesce(sum(length(payload)), 0) FROM history WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'events', count(*), coalesce(sum(length(payload)), 0) FROM events WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'run_threads', count(*), 0 FROM run_threads WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'step_index', count(*), coalesce(sum(length(metadata)), 0) FROM step_index WHERE tenant_id = agentckpt_tenant()
UNION ALL
SELECT 'step_writes', count(*), coalesce(sum(length(payload)), 0) FROM step_writes WHERE tenant_id = agentckpt_tenant();

-- name: ops_table_bytes
-- Pages used by each table and its indexes; needs SQLite built with the dbstat table
-- (the caller falls back to payload sums where it is missing).
SELECT m.tbl_name AS table_name, sum(d.pgsize) AS total_bytes
FROM dbstat d JOIN sqlite_master m ON m.name = d.name
GROUP BY m.tbl_name;

-- name: ops_database_size
SELECT p.page_count * s.page_size AS database_bytes, f.freelist_count * s.page_size AS free_bytes
FROM pragma_page_count() p, pragma_page_size() s, pragma_freelist_count() f;

-- name: ops_durability
-- As this connection has them: the library sets WAL and synchronous=FULL on every
-- connection it opens. synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA.
SELECT j.journal_mode, s.synchronous, sqlite_version() AS sqlite_version
FROM pragma_journal_mode() j, pragma_synchronous() s;

-- name: ops_replication
-- SQLite has no replication: no rows.
SELECT NULL AS application_name, NULL AS client_addr, NULL AS state, NULL AS sync_state,
       NULL AS sync_priority, NULL AS flush_behind_bytes, NULL AS replay_lag_seconds
WHERE 0;

-- name: ops_export_run
SELECT run_id, kind, agent_id, status, head_step, head_version, head_open, snapshot_step,
       chain_bytes, lease_owner, lease_expires_at, lease_epoch, heartbeat_at, created_at,
       updated_at, parent_run_id, parent_step, config, metadata, error
FROM runs WHERE run_id = :run_id AND tenant_id = agentckpt_tenant();

-- name: ops_export_steps
SELECT step, parent_step, kind, is_open, codec, payload, state_version, write_version,
       raw_bytes, state_bytes, checksum, created_at, updated_at
FROM steps WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY step;

-- name: ops_export_blobs
SELECT digest, codec, size, data, created_at
FROM blobs WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY digest;

-- name: ops_export_history
SELECT seq, step, item_count, codec, payload, raw_bytes, created_at
FROM history WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY seq;

-- name: ops_export_effects
SELECT step, key, codec, payload, created_at
FROM effects WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY step, key;

-- name: ops_export_events
SELECT event_id, step, kind, codec, payload, created_at
FROM events WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY seq NULLS FIRST, created_at, event_id;

-- name: ops_import_run
-- Written first by an import, in the transaction that writes every other row of the run:
-- the run appears whole. No ON CONFLICT: a run created meanwhile fails the import.
INSERT INTO runs (run_id, kind, agent_id, status, head_step, head_version, head_open,
                  snapshot_step, chain_bytes, lease_owner, lease_expires_at, lease_epoch,
                  heartbeat_at, created_at, updated_at, parent_run_id, parent_step, config,
                  metadata, error, tenant_id)
VALUES (:run_id, :kind, :agent_id, :status, :head_step, :head_version, :head_open,
        :snapshot_step, :chain_bytes, :lease_owner,
        strftime('%Y-%m-%dT%H:%M:%f', :lease_expires_at), :lease_epoch,
        strftime('%Y-%m-%dT%H:%M:%f', :heartbeat_at), strftime('%Y-%m-%dT%H:%M:%f', :created_at),
        strftime('%Y-%m-%dT%H:%M:%f', :updated_at), :parent_run_id, :parent_step, :config,
        :metadata, :error, agentckpt_tenant());

-- name: ops_import_step
INSERT INTO steps (run_id, step, parent_step, kind, is_open, codec, payload, state_version,
                   write_version, raw_bytes, state_bytes, checksum, created_at, updated_at, tenant_id)
VALUES (:run_id, :step, :parent_step, :kind, :is_open, :codec, :payload, :state_version,
        :write_version, :raw_bytes, :state_bytes, :checksum,
        strftime('%Y-%m-%dT%H:%M:%f', :created_at), strftime('%Y-%m-%dT%H:%M:%f', :updated_at), agentckpt_tenant());

-- name: ops_import_blob
INSERT INTO blobs (run_id, digest, codec, size, data, created_at, tenant_id)
VALUES (:run_id, :digest, :codec, :size, :data, strftime('%Y-%m-%dT%H:%M:%f', :created_at), agentckpt_tenant());

-- name: ops_import_history
INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes, created_at, tenant_id)
VALUES (:run_id, :seq, :step, :item_count, :codec, :payload, :raw_bytes,
        strftime('%Y-%m-%dT%H:%M:%f', :created_at), agentckpt_tenant());

-- name: ops_import_effect
INSERT INTO effects (run_id, step, key, codec, payload, created_at, tenant_id)
VALUES (:run_id, :step, :key, :codec, :payload, strftime('%Y-%m-%dT%H:%M:%f', :created_at), agentckpt_tenant());

-- name: ops_import_event
-- Events come in the order of the export (the run's emission order): seq continues it.
INSERT INTO events (run_id, event_id, step, kind, codec, payload, created_at, tenant_id, seq)
SELECT :run_id, :event_id, :step, :kind, :codec, :payload,
       strftime('%Y-%m-%dT%H:%M:%f', :created_at), agentckpt_tenant(), coalesce(max(seq), 0) + 1
FROM events WHERE run_id = :run_id AND tenant_id = agentckpt_tenant();

-- Rows of framework integrations (LangGraph's thread, checkpoint ids and pending writes),
-- exported and imported with the run they belong to.

-- name: ops_export_threads
SELECT thread_id, namespace FROM run_threads WHERE run_id = :run_id AND tenant_id = agentckpt_tenant();

-- name: ops_export_step_index
SELECT checkpoint_id, step, parent_id, invocation_id, metadata
FROM step_index WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY checkpoint_id;

-- name: ops_export_step_writes
SELECT checkpoint_id, task_id, idx, channel, task_path, type, codec, payload
FROM step_writes WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() ORDER BY checkpoint_id, task_id, idx;

-- name: ops_import_thread
INSERT INTO run_threads (run_id, thread_id, namespace, tenant_id)
VALUES (:run_id, :thread_id, :namespace, agentckpt_tenant());

-- name: ops_import_step_index
INSERT INTO step_index (run_id, checkpoint_id, step, parent_id, invocation_id, metadata, tenant_id)
VALUES (:run_id, :checkpoint_id, :step, :parent_id, :invocation_id,
        :metadata, agentckpt_tenant());

-- name: ops_import_step_write
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type, codec,
                         payload, tenant_id)
VALUES (:run_id, :checkpoint_id, :task_id, :idx, :channel, :task_path,
        :type, :codec, :payload, agentckpt_tenant());

-- name: ops_states_to_upgrade
-- `agentckpt migrate-states`: runs of a kind whose head step recorded an older state
-- version, by run id (keyset pages); an agent filter is optional.
SELECT r.run_id, r.agent_id, r.head_step, s.state_version
FROM runs r
JOIN steps s ON s.run_id = r.run_id AND s.step = r.head_step
WHERE r.tenant_id = agentckpt_tenant()
  AND r.kind = :kind
  AND s.state_version < :current
  AND (:agent_id IS NULL OR r.agent_id = :agent_id)
  AND (:after IS NULL OR r.run_id > :after)
ORDER BY r.run_id
LIMIT :limit;

-- Pages of runs (agentckpt.ops.views.page_runs): the filter, a keyset cursor on
-- (updated_at, run_id) descending, one page with sizes and recovery flags, and how many
-- runs match the filter (on every row; on a single row of NULLs past the last page).
-- The filter block is the same in ops_run_page and ops_usage_by_day.

-- name: ops_run_page
WITH matching AS (
    SELECT r.run_id, r.updated_at FROM runs r
    WHERE r.tenant_id = agentckpt_tenant()
      AND (:kind IS NULL OR r.kind = :kind)
      AND (:status IS NULL OR r.status = :status)
      AND (:agent_id IS NULL OR r.agent_id = :agent_id)
      AND (:search IS NULL
           OR lower(r.run_id) LIKE :search ESCAPE '\'
           OR lower(r.agent_id) LIKE :search ESCAPE '\'
           OR lower(coalesce(json_extract(r.metadata, '$.thread_id'), '')) LIKE :search ESCAPE '\'
           OR lower(coalesce(json_extract(r.metadata, '$.session_id'), '')) LIKE :search ESCAPE '\')
      AND (:updated_within IS NULL
           OR r.updated_at >= strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :updated_within || ' seconds'))
      AND (:idle_seconds IS NULL
           OR r.updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :idle_seconds || ' seconds'))
      AND (:flag IS NULL
           OR (:flag IN ('open-turn', 'attention') AND r.head_open = 1)
           OR (:flag IN ('lease-expired', 'attention')
               AND r.status = 'active' AND r.lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now'))
           OR (:flag IN ('orphan', 'attention')
               AND r.kind = 'conversation' AND r.status = 'active'
               AND r.heartbeat_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :orphan_after || ' seconds')))
),
page AS (
    SELECT run_id, updated_at FROM matching
    WHERE :after_updated_at IS NULL
       OR (updated_at, run_id) < (strftime('%Y-%m-%dT%H:%M:%f', :after_updated_at), :after_run_id)
    ORDER BY updated_at DESC, run_id DESC
    LIMIT :limit
)
SELECT c.matching_runs, r.run_id, r.kind, r.agent_id, r.status, r.head_step, r.head_open,
       r.snapshot_step, r.lease_owner, r.lease_expires_at, r.lease_epoch, r.heartbeat_at,
       r.created_at, r.updated_at, r.parent_run_id, r.parent_step, r.error,
       r.metadata AS metadata, length(r.config) AS config_bytes,
       (r.status = 'active' AND r.lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now'))
         AS lease_expired,
       (r.kind = 'conversation' AND r.status = 'active'
        AND r.heartbeat_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :orphan_after || ' seconds'))
         AS orphaned,
       (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id) AS step_rows,
       (SELECT coalesce(sum(length(s.payload)), 0)
          FROM steps s WHERE s.run_id = r.run_id) AS step_bytes,
       (SELECT count(*) FROM blobs b WHERE b.run_id = r.run_id) AS blob_rows,
       (SELECT coalesce(sum(length(b.data)), 0)
          FROM blobs b WHERE b.run_id = r.run_id) AS blob_bytes,
       (SELECT count(*) FROM history h WHERE h.run_id = r.run_id) AS history_rows,
       (SELECT coalesce(sum(length(h.payload)), 0)
          FROM history h WHERE h.run_id = r.run_id) AS history_bytes,
       (SELECT count(*) FROM effects e WHERE e.run_id = r.run_id) AS effect_rows,
       (SELECT count(*) FROM events v WHERE v.run_id = r.run_id) AS event_rows,
       (SELECT count(*) FROM run_threads t WHERE t.run_id = r.run_id)
       + (SELECT count(*) FROM step_index i WHERE i.run_id = r.run_id)
       + (SELECT count(*) FROM step_writes w WHERE w.run_id = r.run_id) AS framework_rows
FROM (SELECT count(*) AS matching_runs FROM matching) c
LEFT JOIN page p ON 1
LEFT JOIN runs r ON r.run_id = p.run_id
ORDER BY p.updated_at DESC, p.run_id DESC;

-- name: ops_usage_by_day
-- Tokens and cost of the runs that match the filter (the filter of ops_run_page), by
-- agent and the day (UTC) each run was created, newest day first. Only numbers count.
WITH matching AS (
    SELECT r.agent_id, r.created_at, r.metadata FROM runs r
    WHERE r.tenant_id = agentckpt_tenant()
      AND (:kind IS NULL OR r.kind = :kind)
      AND (:status IS NULL OR r.status = :status)
      AND (:agent_id IS NULL OR r.agent_id = :agent_id)
      AND (:search IS NULL
           OR lower(r.run_id) LIKE :search ESCAPE '\'
           OR lower(r.agent_id) LIKE :search ESCAPE '\'
           OR lower(coalesce(json_extract(r.metadata, '$.thread_id'), '')) LIKE :search ESCAPE '\'
           OR lower(coalesce(json_extract(r.metadata, '$.session_id'), '')) LIKE :search ESCAPE '\')
      AND (:updated_within IS NULL
           OR r.updated_at >= strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :updated_within || ' seconds'))
      AND (:idle_seconds IS NULL
           OR r.updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :idle_seconds || ' seconds'))
      AND (:flag IS NULL
           OR (:flag IN ('open-turn', 'attention') AND r.head_open = 1)
           OR (:flag IN ('lease-expired', 'attention')
               AND r.status = 'active' AND r.lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now'))
           OR (:flag IN ('orphan', 'attention')
               AND r.kind = 'conversation' AND r.status = 'active'
               AND r.heartbeat_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :orphan_after || ' seconds')))
)
SELECT agent_id, substr(created_at, 1, 10) AS day, count(*) AS runs,
       coalesce(sum(CASE WHEN json_type(metadata, '$.input_tokens') IN ('integer', 'real')
                         THEN json_extract(metadata, '$.input_tokens') END), 0) AS input_tokens,
       coalesce(sum(CASE WHEN json_type(metadata, '$.output_tokens') IN ('integer', 'real')
                         THEN json_extract(metadata, '$.output_tokens') END), 0) AS output_tokens,
       coalesce(sum(CASE WHEN json_type(metadata, '$.cost_estimate_usd') IN ('integer', 'real')
                         THEN json_extract(metadata, '$.cost_estimate_usd') END), 0) AS cost_usd
FROM matching
GROUP BY agent_id, day
ORDER BY day DESC, agent_id
LIMIT :limit;

-- name: ops_steps_window
-- The kept steps from :first to :last with their payloads, starting at the newest
-- snapshot at or before :first, so the window's states rebuild from its own rows.
SELECT step, parent_step, kind, is_open, codec, payload, state_version, write_version,
       raw_bytes, state_bytes, checksum, created_at, updated_at
FROM steps
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND step >= coalesce((SELECT max(step) FROM steps
                        WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND kind = 'snapshot' AND step <= :first), :first)
  AND step <= :last
ORDER BY step;

-- name: ops_drop_verify_schema
-- SQLite: `agentckpt verify` deletes its scratch file instead; nothing to do here.
SELECT 1 WHERE 0;

-- name: ops_metrics_runs
-- `agentckpt metrics serve`: runs by kind and status, and the active ones whose lease
-- expired (orphans a recovery worker would claim), read at each scrape.
SELECT kind, status, count(*) AS runs,
       sum(CASE WHEN status = 'active'
                 AND lease_expires_at < strftime('%Y-%m-%dT%H:%M:%f', 'now')
                THEN 1 ELSE 0 END) AS lease_expired
FROM runs
WHERE tenant_id = agentckpt_tenant()
GROUP BY kind, status
ORDER BY kind, status;

-- Retention (agentckpt.ops.retention). A run that is active or whose owner holds a live
-- lease (an unopened run's claim_after expiry has no owner and is not a lease) is
-- never a candidate, and the delete checks it again in its own write transaction.

-- name: ops_retention_aged
SELECT run_id, agent_id, status FROM runs
WHERE tenant_id = agentckpt_tenant()
  AND run_id > coalesce(:after, '')
  AND (:agent_id IS NULL OR agent_id = :agent_id)
  AND status <> 'active'
  AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now'))
  AND ((status <> 'failed' AND :ended_seconds IS NOT NULL
        AND updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :ended_seconds || ' seconds'))
    OR (status = 'failed' AND :failed_seconds IS NOT NULL
        AND updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :failed_seconds || ' seconds')))
ORDER BY run_id
LIMIT :limit;

-- name: ops_retention_agents
SELECT DISTINCT agent_id FROM runs
WHERE tenant_id = agentckpt_tenant() AND (:agent_id IS NULL OR agent_id = :agent_id)
ORDER BY agent_id;

-- name: ops_retention_excess
SELECT run_id, created_at, status,
       (status = 'active' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL
                              AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%f', 'now')))
           AS protected
FROM runs
WHERE tenant_id = agentckpt_tenant() AND agent_id = :agent_id
ORDER BY created_at DESC, run_id DESC
LIMIT :limit OFFSET :skip;

-- name: ops_retention_delete
-- One write transaction (BEGIN IMMEDIATE): the check and the deletes see the same rows.
DELETE FROM steps WHERE run_id IN (
    SELECT run_id FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now')));
DELETE FROM blobs WHERE run_id IN (
    SELECT run_id FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now')));
DELETE FROM effects WHERE run_id IN (
    SELECT run_id FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now')));
DELETE FROM history WHERE run_id IN (
    SELECT run_id FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now')));
DELETE FROM events WHERE run_id IN (
    SELECT run_id FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now')));
DELETE FROM runs WHERE tenant_id = agentckpt_tenant() AND run_id IN (SELECT value FROM json_each(:run_ids))
  AND status <> 'active'
  AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%f', 'now'))
RETURNING run_id;

-- name: ops_retention_history
SELECT s.run_id, max(s.step) AS below FROM steps s
WHERE s.tenant_id = agentckpt_tenant() AND s.kind = 'snapshot'
  AND s.run_id > coalesce(:after, '')
  AND s.created_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :history_seconds || ' seconds')
  AND (:agent_id IS NULL OR s.run_id IN (SELECT run_id FROM runs WHERE agent_id = :agent_id))
GROUP BY s.run_id
HAVING max(s.step) > (SELECT min(t.step) FROM steps t WHERE t.run_id = s.run_id)
ORDER BY s.run_id
LIMIT :limit;

-- name: ops_cost_runs
SELECT run_id, agent_id, kind, substr(created_at, 1, 10) AS day, metadata, config
FROM runs
WHERE tenant_id = agentckpt_tenant() AND run_id > coalesce(:after, '')
  AND (:agent_id IS NULL OR agent_id = :agent_id)
  AND (:kind IS NULL OR kind = :kind)
  AND (:status IS NULL OR status = :status)
ORDER BY run_id
LIMIT :limit;
