-- Named queries of the framework adapters (agentckpt.integrations), PostgreSQL dialect.
-- Tables: run_threads, step_index, step_writes (migration 0003). A checkpoint is visible
-- only when its step exists too (the JOIN on steps), so a crash between committing a step
-- and indexing it, or between deleting a run and its index rows, shows nothing half-done.
-- Every statement on a thread's hot path filters on run_id.

-- name: lg_open_run
-- Record the thread and namespace of a run, once the run exists.
INSERT INTO run_threads (run_id, thread_id, namespace)
VALUES (%(run_id)s, %(thread_id)s, %(namespace)s)
ON CONFLICT (run_id) DO NOTHING;

-- name: lg_thread_runs
SELECT run_id, namespace FROM run_threads
WHERE thread_id = %(thread_id)s
ORDER BY namespace;

-- name: lg_index_put
-- Putting the same checkpoint id again points it at the newer step, as LangGraph's savers
-- overwrite a checkpoint put twice.
INSERT INTO step_index (run_id, checkpoint_id, step, parent_id, invocation_id, metadata)
VALUES (%(run_id)s, %(checkpoint_id)s, %(step)s, %(parent_id)s, %(invocation_id)s,
        %(metadata)s)
ON CONFLICT (run_id, checkpoint_id) DO UPDATE SET
    step = EXCLUDED.step, parent_id = EXCLUDED.parent_id,
    invocation_id = EXCLUDED.invocation_id, metadata = EXCLUDED.metadata;

-- name: lg_index_get
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = %(run_id)s AND i.checkpoint_id = %(checkpoint_id)s;

-- name: lg_index_latest
-- "Latest" is the greatest checkpoint id, as in every LangGraph saver.
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = %(run_id)s
ORDER BY i.checkpoint_id DESC
LIMIT 1;

-- name: lg_index_page_run
-- One page of a run's checkpoints, newest first, below a keyset bound.
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = %(run_id)s
  AND (%(below)s::text IS NULL OR i.checkpoint_id < %(below)s::text)
ORDER BY i.checkpoint_id DESC
LIMIT %(page)s;

-- name: lg_index_page
-- One page of the checkpoints of a thread (every namespace) or of every thread, newest
-- first. Not on the hot path: a graph run reads one namespace (lg_index_page_run).
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.metadata, t.thread_id, t.namespace
FROM run_threads t
JOIN step_index i ON i.run_id = t.run_id
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE (%(thread_id)s::text IS NULL OR t.thread_id = %(thread_id)s::text)
  AND (%(before)s::text IS NULL OR i.checkpoint_id < %(before)s::text)
  AND (%(after_id)s::text IS NULL
       OR (i.checkpoint_id, i.run_id) < (%(after_id)s::text, %(after_run)s::uuid))
ORDER BY i.checkpoint_id DESC, i.run_id DESC
LIMIT %(page)s;

-- name: lg_index_all
-- Every visible checkpoint of a run in step order (copy and prune).
SELECT i.run_id, i.checkpoint_id, i.step, i.parent_id, i.invocation_id, i.metadata, s.kind
FROM step_index i
JOIN steps s ON s.run_id = i.run_id AND s.step = i.step
WHERE i.run_id = %(run_id)s
ORDER BY i.step, i.checkpoint_id;

-- name: lg_run_indexed
SELECT 1 AS present FROM step_index WHERE run_id = %(run_id)s LIMIT 1;

-- name: lg_writes_get
-- The checkpoint's pending writes and, when sends_of names its parent, the parent's writes
-- to sends_channel: the sends a pre-v4 checkpoint takes as that channel's value, as
-- PostgresSaver migrates them (one statement, not a second round trip).
SELECT checkpoint_id, task_id, channel, idx, task_path, type, codec, payload
FROM step_writes
WHERE run_id = %(run_id)s
  AND (checkpoint_id = %(checkpoint_id)s
       OR (checkpoint_id = %(sends_of)s AND channel = %(sends_channel)s));

-- name: lg_writes_insert
-- A task's regular writes are written once: a retried put_writes keeps the first.
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload)
VALUES (%(run_id)s, %(checkpoint_id)s, %(task_id)s, %(idx)s, %(channel)s, %(task_path)s,
        %(type)s, %(codec)s, %(payload)s)
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO NOTHING;

-- name: lg_writes_replace
-- Special writes (error, interrupt, resume, scheduled) replace the earlier one.
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload)
VALUES (%(run_id)s, %(checkpoint_id)s, %(task_id)s, %(idx)s, %(channel)s, %(task_path)s,
        %(type)s, %(codec)s, %(payload)s)
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = EXCLUDED.channel, task_path = EXCLUDED.task_path, type = EXCLUDED.type,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload;

-- name: lg_copy_writes
INSERT INTO step_writes (run_id, checkpoint_id, task_id, idx, channel, task_path, type,
                         codec, payload)
SELECT %(to_run_id)s, checkpoint_id, task_id, idx, channel, task_path, type, codec, payload
FROM step_writes WHERE run_id = %(from_run_id)s
ON CONFLICT (run_id, checkpoint_id, task_id, idx) DO NOTHING;

-- name: lg_keep_only
-- Keep one checkpoint of a run, now stored at %(step)s; its parent is gone with the rest.
-- The writes of the checkpoints deleted go with them, not every other write: a graph
-- with durability="async" saves a checkpoint's writes before the checkpoint itself.
WITH gone_index AS (
    DELETE FROM step_index
    WHERE run_id = %(run_id)s AND checkpoint_id <> %(checkpoint_id)s
    RETURNING checkpoint_id
), gone_writes AS (
    DELETE FROM step_writes w USING gone_index g
    WHERE w.run_id = %(run_id)s AND w.checkpoint_id = g.checkpoint_id
)
UPDATE step_index SET step = %(step)s, parent_id = NULL
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s;

-- name: lg_delete_invocations
-- The checkpoints (and their writes) of the given invocations; returns the runs touched.
WITH gone AS (
    DELETE FROM step_index
    WHERE invocation_id IN (SELECT json_array_elements_text(%(ids)s::json))
    RETURNING run_id, checkpoint_id
), gone_writes AS (
    DELETE FROM step_writes w USING gone
    WHERE w.run_id = gone.run_id AND w.checkpoint_id = gone.checkpoint_id
)
SELECT DISTINCT run_id FROM gone;

-- name: lg_blobs_get
SELECT digest, codec, data FROM blobs
WHERE run_id = %(run_id)s
  AND digest IN (SELECT json_array_elements_text(%(digests)s::json));
