-- Named queries of the framework adapters (agentckpt.integrations), SQLite dialect.
-- Same queries as sql/postgres/langgraph.sql; see there for the why of each.

-- name: lg_open_run
-- Record the thread and namespace of a run, once the run exists.
INSERT INTO run_threads (run_id, thread_id, namespace, tenant_id)
VALUES (:run_id, :thread_id, :namespace, agentckpt_tenant())
ON CONFLICT (run_id) DO NOTHING;

-- name: lg_thread_runs
SELECT run_id, namespace FROM run_threads
WHERE thread_id = :thread_id AND tenant_id = agentckpt_tenant()
ORDER BY namespace;

-- name: lg_index_put
INSERT INTO step_index (run_id, checkpoint_id, step, parent_id, invocation_id, metadata, tenant_id)
VALUES (:run_id, :checkpoint_id, :step, :parent_id, :invocation_id, :metadata, agentckpt_tenant())
ON CONFLICT (run_id, checkpoint_id) DO UPDATE SET
    step = excluded.step, parent_id = excluded.parent_id,
    invocation_id = excluded.invocation_id, metadata = excluded.metadata
WHERE step_index.tenant_id = agentckpt_tenant();

-- name: lg_index_get
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = :run_id AND i.tenant_id = agentckpt_tenant() AND i.checkpoint_id = :checkpoint_id;

-- name: lg_index_latest
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = :run_id AND i.tenant_id = agentckpt_tenant()
ORDER BY i.checkpoint_id DESC
LIMIT 1;

-- name: lg_index_page_run
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = :run_id AND i.tenant_id = agentckpt_tenant()
  AND (:below IS NULL OR i.checkpoint_id < :below)
ORDER BY i.checkpoint_id DESC
LIMIT :page;

-- name: lg_index_page
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata, t.thread_id, t.namespace
FROM run_threads t
JOIN step_index i ON i.run_id = t.run_id
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE t.tenant_id = agentckpt_tenant()
  AND (:thread_id IS NULL OR t.thread_id = :thread_id)
  AND (:before IS NULL OR i.checkpoint_id < :before)
  AND (:after_id IS NULL OR (i.checkpoint_id, i.run_id) < (:after_id, :after_run))
ORDER BY i.checkpoint_id DESC, i.run_id DESC
LIMIT :page;

-- name: lg_index_all
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.invocation_id, i.metadata, s.kind
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = :run_id AND i.tenant_id = agentckpt_tenant()
ORDER BY i.step, i.checkpoint_id;

-- name: lg_run_indexed
SELECT 1 AS present FROM step_index WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() LIMIT 1;

-- name: lg_writes_get
SELECT checkpoint_id, task_id, channel, idx, task_path, type, codec, payload
FROM step_writes
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND (checkpoint_id = :checkpoint_id
       OR (checkpoint_id = :sends_of AND channel = :sends_channel));

-- name: lg_writes_insert
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload, tenant_id)
VALUES (:run_id, :checkpoint_id, :task_id, :idx, :channel, :task_path, :type, :codec,
        :payload, agentckpt_tenant())
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO NOTHING;

-- name: lg_writes_replace
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload, tenant_id)
VALUES (:run_id, :checkpoint_id, :task_id, :idx, :channel, :task_path, :type, :codec,
        :payload, agentckpt_tenant())
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, task_path = excluded.task_path, type = excluded.type,
    codec = excluded.codec, payload = excluded.payload
WHERE step_writes.tenant_id = agentckpt_tenant();

-- name: lg_copy_writes
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload, tenant_id)
SELECT :to_run_id, checkpoint_id, task_id, idx, channel, task_path, type, codec, payload,
       agentckpt_tenant()
FROM step_writes WHERE run_id = :from_run_id AND tenant_id = agentckpt_tenant()
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO NOTHING;

-- name: lg_keep_only
-- The writes of the checkpoints deleted, not every other write: a graph with
-- durability="async" saves a checkpoint's writes before the checkpoint itself.
DELETE FROM step_writes
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND checkpoint_id IN (
    SELECT checkpoint_id FROM step_index
    WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND checkpoint_id <> :checkpoint_id);
DELETE FROM step_index WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND checkpoint_id <> :checkpoint_id;
UPDATE step_index SET step = :step, parent_id = NULL
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant() AND checkpoint_id = :checkpoint_id;

-- name: lg_delete_invocations
DELETE FROM step_writes
WHERE tenant_id = agentckpt_tenant() AND (run_id, checkpoint_id) IN (
    SELECT run_id, checkpoint_id FROM step_index
    WHERE tenant_id = agentckpt_tenant()
      AND invocation_id IN (SELECT value FROM json_each(:ids)));
DELETE FROM step_index
WHERE tenant_id = agentckpt_tenant()
  AND invocation_id IN (SELECT value FROM json_each(:ids))
RETURNING run_id;

-- name: lg_blobs_get
SELECT digest, codec, data FROM blobs
WHERE run_id = :run_id AND tenant_id = agentckpt_tenant()
  AND digest IN (SELECT value FROM json_each(:digests));
