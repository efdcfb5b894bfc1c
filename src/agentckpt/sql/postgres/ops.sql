-- Named queries of the command line and the web inspector (agentckpt.cli, .inspector).
-- Read-mostly: listings with sizes, storage statistics, durability settings, and the
-- raw rows that `agentckpt export` writes and `agentckpt import` recreates exactly.

-- name: ops_run_listing
-- Runs with their row counts and stored bytes; every filter is optional (NULL).
SELECT r.run_id, r.kind, r.agent_id, r.status, r.head_step, r.head_open, r.snapshot_step,
       r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at, r.parent_run_id,
       r.parent_step, r.error, octet_length(r.config) AS config_bytes,
       (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id) AS step_rows,
       (SELECT coalesce(sum(octet_length(s.payload)), 0)::bigint
          FROM steps s WHERE s.run_id = r.run_id) AS step_bytes,
       (SELECT count(*) FROM blobs b WHERE b.run_id = r.run_id) AS blob_rows,
       (SELECT coalesce(sum(octet_length(b.data)), 0)::bigint
          FROM blobs b WHERE b.run_id = r.run_id) AS blob_bytes,
       (SELECT count(*) FROM history h WHERE h.run_id = r.run_id) AS history_rows,
       (SELECT coalesce(sum(octet_length(h.payload)), 0)::bigint
          FROM history h WHERE h.run_id = r.run_id) AS history_bytes,
       (SELECT count(*) FROM effects e WHERE e.run_id = r.run_id) AS effect_rows,
       (SELECT count(*) FROM events v WHERE v.run_id = r.run_id) AS event_rows,
       (SELECT count(*) FROM run_threads t WHERE t.run_id = r.run_id)
       + (SELECT count(*) FROM step_index i WHERE i.run_id = r.run_id)
       + (SELECT count(*) FROM step_writes w WHERE w.run_id = r.run_id) AS framework_rows
FROM runs r
WHERE (%(run_id)s::uuid IS NULL OR r.run_id = %(run_id)s::uuid)
  AND (%(agent_id)s::text IS NULL OR r.agent_id = %(agent_id)s)
  AND (%(kind)s::text IS NULL OR r.kind = %(kind)s)
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
  AND (%(idle_seconds)s::float8 IS NULL
       OR r.updated_at < now() - make_interval(secs => %(idle_seconds)s::float8))
ORDER BY r.updated_at DESC, r.run_id
LIMIT %(limit)s;

-- name: ops_table_sizes
-- Rows and payload bytes of each table.
SELECT 'runs' AS table_name, count(*) AS row_count,
       coalesce(sum(octet_length(config)), 0)::bigint AS payload_bytes FROM runs
UNION ALL
SELECT 'steps', count(*), coalesce(sum(octet_length(payload)), 0)::bigint FROM steps
UNION ALL
SELECT 'blobs', count(*), coalesce(sum(octet_length(data)), 0)::bigint FROM blobs
UNION ALL
SELECT 'effects', count(*), coalesce(sum(octet_length(payload)), 0)::bigint FROM effects
UNION ALL
SELECT 'history', count(*), coalesce(sum(octet_length(payload)), 0)::bigint FROM history
UNION ALL
SELECT 'events', count(*), coalesce(sum(octet_length(payload)), 0)::bigint FROM events
UNION ALL
SELECT 'run_threads', count(*), 0::bigint FROM run_threads
UNION ALL
SELECT 'step_index', count(*), coalesce(sum(octet_length(metadata)), 0)::bigint FROM step_index
UNION ALL
SELECT 'step_writes', count(*), coalesce(sum(octet_length(payload)), 0)::bigint FROM step_writes;

-- name: ops_table_bytes
-- On-disk bytes of each table of the schema: heap, indexes and TOAST.
SELECT c.relname AS table_name, pg_total_relation_size(c.oid) AS total_bytes
FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p');

-- name: ops_database_size
SELECT pg_database_size(current_database()) AS database_bytes,
       current_database() AS database_name, current_schema() AS schema_name;

-- name: ops_durability
-- The settings that decide whether an acknowledged commit survives a crash or failover,
-- as this connection sees them (a role or database may override the server's default).
SELECT current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('fsync') AS fsync,
       current_setting('full_page_writes') AS full_page_writes,
       current_setting('synchronous_standby_names') AS synchronous_standby_names,
       current_setting('wal_level') AS wal_level,
       current_setting('data_checksums') AS data_checksums,
       current_setting('server_version') AS server_version,
       current_setting('autovacuum') AS autovacuum,
       pg_is_in_recovery() AS in_recovery,
       (SELECT count(*) FROM pg_stat_replication) AS replicas,
       (SELECT count(*) FROM pg_stat_replication
         WHERE sync_state IN ('sync', 'quorum')) AS sync_replicas,
       -- A role without pg_monitor sees the standbys but not their state.
       (SELECT count(*) FROM pg_stat_replication WHERE state IS NULL) AS replicas_hidden;

-- name: ops_replication
-- Each standby streaming from this server, and the WAL it has not flushed yet.
SELECT application_name, client_addr::text AS client_addr, state, sync_state,
       sync_priority,
       -- (a standby in recovery has no current WAL position of its own)
       CASE WHEN NOT pg_is_in_recovery()
            THEN pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::bigint END
           AS flush_behind_bytes,
       extract(epoch FROM replay_lag)::float8 AS replay_lag_seconds
FROM pg_stat_replication
ORDER BY application_name;

-- name: ops_export_run
SELECT run_id, kind, agent_id, status, head_step, head_version, head_open, snapshot_step,
       chain_bytes, lease_owner, lease_expires_at, lease_epoch, heartbeat_at, created_at,
       updated_at, parent_run_id, parent_step, config, metadata::text AS metadata, error
FROM runs WHERE run_id = %(run_id)s;

-- name: ops_export_steps
SELECT step, parent_step, kind, is_open, codec, payload, state_version, write_version,
       raw_bytes, state_bytes, checksum, created_at, updated_at
FROM steps WHERE run_id = %(run_id)s ORDER BY step;

-- name: ops_export_blobs
SELECT digest, codec, size, data, created_at
FROM blobs WHERE run_id = %(run_id)s ORDER BY digest;

-- name: ops_export_history
SELECT seq, step, item_count, codec, payload, raw_bytes, created_at
FROM history WHERE run_id = %(run_id)s ORDER BY seq;

-- name: ops_export_effects
SELECT step, key, codec, payload, created_at
FROM effects WHERE run_id = %(run_id)s ORDER BY step, key;

-- name: ops_export_events
SELECT event_id::text AS event_id, step, kind, codec, payload, created_at
FROM events WHERE run_id = %(run_id)s ORDER BY seq NULLS FIRST, created_at, event_id;

-- name: ops_import_run
-- Written first by an import, in the transaction that writes every other row of the run:
-- the run appears whole. No ON CONFLICT: a run created meanwhile fails the import.
INSERT INTO runs (run_id, kind, agent_id, status, head_step, head_version, head_open,
                  snapshot_step, chain_bytes, lease_owner, lease_expires_at, lease_epoch,
                  heartbeat_at, created_at, updated_at, parent_run_id, parent_step, config,
                  metadata, error)
VALUES (%(run_id)s, %(kind)s, %(agent_id)s, %(status)s, %(head_step)s, %(head_version)s,
        %(head_open)s, %(snapshot_step)s, %(chain_bytes)s, %(lease_owner)s,
        %(lease_expires_at)s::timestamptz, %(lease_epoch)s, %(heartbeat_at)s::timestamptz,
        %(created_at)s::timestamptz, %(updated_at)s::timestamptz, %(parent_run_id)s::uuid,
        %(parent_step)s, %(config)s, %(metadata)s::jsonb, %(error)s);

-- name: ops_import_step
INSERT INTO steps (run_id, step, parent_step, kind, is_open, codec, payload, state_version,
                   write_version, raw_bytes, state_bytes, checksum, created_at, updated_at)
VALUES (%(run_id)s, %(step)s, %(parent_step)s, %(kind)s, %(is_open)s, %(codec)s,
        %(payload)s, %(state_version)s, %(write_version)s, %(raw_bytes)s, %(state_bytes)s,
        %(checksum)s, %(created_at)s::timestamptz, %(updated_at)s::timestamptz);

-- name: ops_import_blob
INSERT INTO blobs (run_id, digest, codec, size, data, created_at)
VALUES (%(run_id)s, %(digest)s, %(codec)s, %(size)s, %(data)s, %(created_at)s::timestamptz);

-- name: ops_import_history
INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes, created_at)
VALUES (%(run_id)s, %(seq)s, %(step)s, %(item_count)s, %(codec)s, %(payload)s,
        %(raw_bytes)s, %(created_at)s::timestamptz);

-- name: ops_import_effect
INSERT INTO effects (run_id, step, key, codec, payload, created_at)
VALUES (%(run_id)s, %(step)s, %(key)s, %(codec)s, %(payload)s, %(created_at)s::timestamptz);

-- name: ops_import_event
-- Events come in the order of the export (the run's emission order): seq continues it.
INSERT INTO events (run_id, event_id, step, kind, codec, payload, created_at, seq)
SELECT %(run_id)s, %(event_id)s::uuid, %(step)s, %(kind)s, %(codec)s, %(payload)s,
       %(created_at)s::timestamptz, coalesce(max(seq), 0) + 1
FROM events WHERE run_id = %(run_id)s;

-- Rows of framework integrations (LangGraph's thread, checkpoint ids and pending writes),
-- exported and imported with the run they belong to.

-- name: ops_export_threads
SELECT thread_id, namespace FROM run_threads WHERE run_id = %(run_id)s;

-- name: ops_export_step_index
SELECT checkpoint_id, step, parent_id, invocation_id, metadata
FROM step_index WHERE run_id = %(run_id)s ORDER BY checkpoint_id;

-- name: ops_export_step_writes
SELECT checkpoint_id, task_id, idx, channel, task_path, type, codec, payload
FROM step_writes WHERE run_id = %(run_id)s ORDER BY checkpoint_id, task_id, idx;

-- name: ops_import_thread
INSERT INTO run_threads (run_id, thread_id, namespace)
VALUES (%(run_id)s, %(thread_id)s, %(namespace)s);

-- name: ops_import_step_index
INSERT INTO step_index (run_id, checkpoint_id, step, parent_id, invocation_id, metadata)
VALUES (%(run_id)s, %(checkpoint_id)s, %(step)s, %(parent_id)s, %(invocation_id)s,
        %(metadata)s);

-- name: ops_import_step_write
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type, codec,
                         payload)
VALUES (%(run_id)s, %(checkpoint_id)s, %(task_id)s, %(idx)s, %(channel)s, %(task_path)s,
        %(type)s, %(codec)s, %(payload)s);

-- name: ops_states_to_upgrade
-- `agentckpt migrate-states`: runs of a kind whose head step recorded an older state
-- version, by run id (keyset pages); an agent filter is optional.
SELECT r.run_id, r.agent_id, r.head_step, s.state_version
FROM runs r
JOIN steps s ON s.run_id = r.run_id AND s.step = r.head_step
WHERE r.kind = %(kind)s
  AND s.state_version < %(current)s
  AND (%(agent_id)s::text IS NULL OR r.agent_id = %(agent_id)s::text)
  AND (%(after)s::uuid IS NULL OR r.run_id > %(after)s::uuid)
ORDER BY r.run_id
LIMIT %(limit)s;

-- Pages of runs (agentckpt.ops.views.page_runs): the filter, a keyset cursor on
-- (updated_at, run_id) descending, one page with sizes and recovery flags, and how many
-- runs match the filter (on every row; on a single row of NULLs past the last page).
-- The filter block is the same in ops_run_page and ops_usage_by_day. No index serves the
-- order: the per-commit update of a run's row touches no index (see schema.sql), and a
-- sort of the matching (updated_at, run_id) pairs is what each page costs.

-- name: ops_run_page
WITH matching AS (
    SELECT r.run_id, r.updated_at FROM runs r
    WHERE (%(kind)s::text IS NULL OR r.kind = %(kind)s)
      AND (%(status)s::text IS NULL OR r.status = %(status)s)
      AND (%(agent_id)s::text IS NULL OR r.agent_id = %(agent_id)s)
      AND (%(search)s::text IS NULL
           OR lower(r.run_id::text) LIKE %(search)s ESCAPE '\'
           OR lower(r.agent_id) LIKE %(search)s ESCAPE '\'
           OR lower(coalesce(r.metadata->>'thread_id', '')) LIKE %(search)s ESCAPE '\'
           OR lower(coalesce(r.metadata->>'session_id', '')) LIKE %(search)s ESCAPE '\')
      AND (%(updated_within)s::float8 IS NULL
           OR r.updated_at >= now() - make_interval(secs => %(updated_within)s::float8))
      AND (%(idle_seconds)s::float8 IS NULL
           OR r.updated_at < now() - make_interval(secs => %(idle_seconds)s::float8))
      AND (%(flag)s::text IS NULL
           OR (%(flag)s IN ('open-turn', 'attention') AND r.head_open)
           OR (%(flag)s IN ('lease-expired', 'attention')
               AND r.status = 'active' AND r.lease_expires_at < now())
           OR (%(flag)s IN ('orphan', 'attention')
               AND r.kind = 'conversation' AND r.status = 'active'
               AND r.heartbeat_at < now() - make_interval(secs => %(orphan_after)s::float8)))
),
page AS (
    SELECT run_id, updated_at FROM matching
    WHERE %(after_updated_at)s::timestamptz IS NULL
       OR (updated_at, run_id) < (%(after_updated_at)s::timestamptz, %(after_run_id)s::uuid)
    ORDER BY updated_at DESC, run_id DESC
    LIMIT %(limit)s
)
SELECT c.matching_runs, r.run_id, r.kind, r.agent_id, r.status, r.head_step, r.head_open,
       r.snapshot_step, r.lease_owner, r.lease_expires_at, r.lease_epoch, r.heartbeat_at,
       r.created_at, r.updated_at, r.parent_run_id, r.parent_step, r.error,
       r.metadata::text AS metadata, octet_length(r.config) AS config_bytes,
       (r.status = 'active' AND r.lease_expires_at < now()) AS lease_expired,
       (r.kind = 'conversation' AND r.status = 'active'
        AND r.heartbeat_at < now() - make_interval(secs => %(orphan_after)s::float8)) AS orphaned,
       (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id) AS step_rows,
       (SELECT coalesce(sum(octet_length(s.payload)), 0)::bigint
          FROM steps s WHERE s.run_id = r.run_id) AS step_bytes,
       (SELECT count(*) FROM blobs b WHERE b.run_id = r.run_id) AS blob_rows,
       (SELECT coalesce(sum(octet_length(b.data)), 0)::bigint
          FROM blobs b WHERE b.run_id = r.run_id) AS blob_bytes,
       (SELECT count(*) FROM history h WHERE h.run_id = r.run_id) AS history_rows,
       (SELECT coalesce(sum(octet_length(h.payload)), 0)::bigint
          FROM history h WHERE h.run_id = r.run_id) AS history_bytes,
       (SELECT count(*) FROM effects e WHERE e.run_id = r.run_id) AS effect_rows,
       (SELECT count(*) FROM events v WHERE v.run_id = r.run_id) AS event_rows,
       (SELECT count(*) FROM run_threads t WHERE t.run_id = r.run_id)
       + (SELECT count(*) FROM step_index i WHERE i.run_id = r.run_id)
       + (SELECT count(*) FROM step_writes w WHERE w.run_id = r.run_id) AS framework_rows
FROM (SELECT count(*) AS matching_runs FROM matching) c
LEFT JOIN page p ON true
LEFT JOIN runs r ON r.run_id = p.run_id
ORDER BY p.updated_at DESC, p.run_id DESC;

-- name: ops_usage_by_day
-- Tokens and cost of the runs that match the filter (the filter of ops_run_page), by
-- agent and the day (UTC) each run was created, newest day first. Only numbers count.
WITH matching AS (
    SELECT r.agent_id, r.created_at, r.metadata FROM runs r
    WHERE (%(kind)s::text IS NULL OR r.kind = %(kind)s)
      AND (%(status)s::text IS NULL OR r.status = %(status)s)
      AND (%(agent_id)s::text IS NULL OR r.agent_id = %(agent_id)s)
      AND (%(search)s::text IS NULL
           OR lower(r.run_id::text) LIKE %(search)s ESCAPE '\'
           OR lower(r.agent_id) LIKE %(search)s ESCAPE '\'
           OR lower(coalesce(r.metadata->>'thread_id', '')) LIKE %(search)s ESCAPE '\'
           OR lower(coalesce(r.metadata->>'session_id', '')) LIKE %(search)s ESCAPE '\')
      AND (%(updated_within)s::float8 IS NULL
           OR r.updated_at >= now() - make_interval(secs => %(updated_within)s::float8))
      AND (%(idle_seconds)s::float8 IS NULL
           OR r.updated_at < now() - make_interval(secs => %(idle_seconds)s::float8))
      AND (%(flag)s::text IS NULL
           OR (%(flag)s IN ('open-turn', 'attention') AND r.head_open)
           OR (%(flag)s IN ('lease-expired', 'attention')
               AND r.status = 'active' AND r.lease_expires_at < now())
           OR (%(flag)s IN ('orphan', 'attention')
               AND r.kind = 'conversation' AND r.status = 'active'
               AND r.heartbeat_at < now() - make_interval(secs => %(orphan_after)s::float8)))
)
SELECT agent_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       count(*) AS runs,
       coalesce(sum(CASE WHEN jsonb_typeof(metadata->'input_tokens') = 'number'
                         THEN (metadata->>'input_tokens')::numeric END), 0) AS input_tokens,
       coalesce(sum(CASE WHEN jsonb_typeof(metadata->'output_tokens') = 'number'
                         THEN (metadata->>'output_tokens')::numeric END), 0) AS output_tokens,
       coalesce(sum(CASE WHEN jsonb_typeof(metadata->'cost_estimate_usd') = 'number'
                         THEN (metadata->>'cost_estimate_usd')::numeric END), 0) AS cost_usd
FROM matching
GROUP BY agent_id, day
ORDER BY day DESC, agent_id
LIMIT %(limit)s;

-- name: ops_steps_window
-- The kept steps from %(first)s to %(last)s with their payloads, starting at the newest
-- snapshot at or before %(first)s, so the window's states rebuild from its own rows.
SELECT step, parent_step, kind, is_open, codec, payload, state_version, write_version,
       raw_bytes, state_bytes, checksum, created_at, updated_at
FROM steps
WHERE run_id = %(run_id)s
  AND step >= coalesce((SELECT max(step) FROM steps
                        WHERE run_id = %(run_id)s AND kind = 'snapshot'
                          AND step <= %(first)s), %(first)s)
  AND step <= %(last)s
ORDER BY step;

-- name: ops_drop_verify_schema
-- `agentckpt verify` removes its scratch schema, which is the connection's search_path;
-- only ever a schema named agentckpt_verify_..., whatever the connection points at.
DO $$
BEGIN
    IF current_schema() LIKE 'agentckpt\_verify\_%%' THEN
        EXECUTE format('DROP SCHEMA %%I CASCADE', current_schema());
    END IF;
END
$$;

-- name: ops_metrics_runs
-- `agentckpt metrics serve`: runs by kind and status, and the active ones whose lease
-- expired (orphans a recovery worker would claim), read at each scrape.
SELECT kind, status, count(*) AS runs,
       count(*) FILTER (WHERE status = 'active' AND lease_expires_at < now()) AS lease_expired
FROM runs
GROUP BY kind, status
ORDER BY kind, status;

-- Retention (agentckpt.ops.retention). A run that is active or whose owner holds a live
-- lease (an unopened run's claim_after expiry has no owner and is not a lease) is
-- never a candidate, and the delete checks it again under the rows' locks. Batches walk
-- the primary key (run_id > the last one, never an OR that would defeat the index).

-- name: ops_retention_aged
-- The next batch, by run id after %(after)s, of runs past an age rule: ended (any status
-- but active and failed) and not updated for %(ended_seconds)s, or failed and not updated
-- for %(failed_seconds)s (NULL: no such rule).
SELECT run_id, agent_id, status FROM runs
WHERE run_id > coalesce(%(after)s::uuid, '00000000-0000-0000-0000-000000000000')
  AND (%(agent_id)s::text IS NULL OR agent_id = %(agent_id)s)
  AND status <> 'active'
  AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= now())
  AND ((status <> 'failed' AND %(ended_seconds)s::float8 IS NOT NULL
        AND updated_at < now() - make_interval(secs => %(ended_seconds)s::float8))
    OR (status = 'failed' AND %(failed_seconds)s::float8 IS NOT NULL
        AND updated_at < now() - make_interval(secs => %(failed_seconds)s::float8)))
ORDER BY run_id
LIMIT %(limit)s;

-- name: ops_retention_agents
SELECT DISTINCT agent_id FROM runs
WHERE %(agent_id)s::text IS NULL OR agent_id = %(agent_id)s
ORDER BY agent_id;

-- name: ops_retention_excess
-- An agent's runs from position %(skip)s on, newest (by creation) first: the caller skips
-- its K newest plus the protected runs it has already passed. Protected runs (active or
-- leased) come too: they count towards the newest and are never deleted.
SELECT run_id, created_at, status,
       (status = 'active' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL AND lease_expires_at > now()))
           AS protected
FROM runs
WHERE agent_id = %(agent_id)s
ORDER BY created_at DESC, run_id DESC
OFFSET %(skip)s
LIMIT %(limit)s;

-- name: ops_retention_delete
-- Delete a batch of runs whole, re-checking under FOR UPDATE that none became active or
-- leased meanwhile (a lease taken now waits for this statement, then finds no run).
WITH doomed AS (
    SELECT run_id FROM runs
    WHERE run_id IN (SELECT jsonb_array_elements_text(%(run_ids)s::jsonb)::uuid)
      AND status <> 'active'
      AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= now())
    FOR UPDATE
), gone_steps AS (
    DELETE FROM steps WHERE run_id IN (SELECT run_id FROM doomed)
), gone_blobs AS (
    DELETE FROM blobs WHERE run_id IN (SELECT run_id FROM doomed)
), gone_effects AS (
    DELETE FROM effects WHERE run_id IN (SELECT run_id FROM doomed)
), gone_history AS (
    DELETE FROM history WHERE run_id IN (SELECT run_id FROM doomed)
), gone_events AS (
    DELETE FROM events WHERE run_id IN (SELECT run_id FROM doomed)
)
DELETE FROM runs WHERE run_id IN (SELECT run_id FROM doomed) RETURNING run_id;

-- name: ops_retention_history
-- The next batch of runs, by run id, holding kept steps before a snapshot older than
-- %(history_seconds)s: the newest such snapshot, below which the steps can go.
SELECT s.run_id, max(s.step) AS below FROM steps s
WHERE s.kind = 'snapshot'
  AND s.run_id > coalesce(%(after)s::uuid, '00000000-0000-0000-0000-000000000000')
  AND s.created_at < now() - make_interval(secs => %(history_seconds)s::float8)
  AND (%(agent_id)s::text IS NULL
       OR s.run_id IN (SELECT run_id FROM runs WHERE agent_id = %(agent_id)s))
GROUP BY s.run_id
HAVING max(s.step) > (SELECT min(t.step) FROM steps t WHERE t.run_id = s.run_id)
ORDER BY s.run_id
LIMIT %(limit)s;

-- name: ops_cost_runs
-- Costs (agentckpt.ops.costs): the next batch of runs by run id with the day (UTC) each
-- was created, its metadata and its config (the model is read from it).
SELECT run_id, agent_id, kind, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       metadata::text AS metadata, config
FROM runs
WHERE run_id > coalesce(%(after)s::uuid, '00000000-0000-0000-0000-000000000000')
  AND (%(agent_id)s::text IS NULL OR agent_id = %(agent_id)s)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY run_id
LIMIT %(limit)s;
