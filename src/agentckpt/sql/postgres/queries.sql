-- Named queries for PostgreSQL. Each block starts with "-- name: <name>"; the Python side
-- refers to them by name and never builds SQL from user data. Every statement that touches
-- a run's rows filters on run_id, so each one is routed to a single partition or shard;
-- commit_steps filters on the run ids of its batch (one run with group_commit=1).

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: migration_lock
-- Keyed on the search_path (the store's schema), not current_schema(): that is NULL until
-- the schema exists, and pg_advisory_xact_lock(NULL) takes no lock at all.
SELECT pg_advisory_xact_lock(hashtext(current_setting('search_path') || '.agentckpt_migrations'));

-- name: applied_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: record_migration
INSERT INTO schema_migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: insert_run
INSERT INTO runs (run_id, kind, agent_id, config, metadata, parent_run_id, parent_step)
VALUES (%(run_id)s, %(kind)s, %(agent_id)s, %(config)s, %(metadata)s,
        %(parent_run_id)s, %(parent_step)s)
ON CONFLICT (run_id) DO NOTHING
RETURNING run_id;

-- name: get_run
SELECT run_id, kind, agent_id, status, head_step, head_version, head_open, snapshot_step,
       chain_bytes, lease_owner, lease_expires_at, lease_epoch, heartbeat_at, created_at,
       updated_at, parent_run_id, parent_step, config, metadata::text AS metadata, error
FROM runs WHERE run_id = %(run_id)s;

-- name: list_runs
SELECT run_id, kind, agent_id, status, head_step, head_version, head_open, snapshot_step,
       chain_bytes, lease_owner, lease_expires_at, lease_epoch, heartbeat_at, created_at,
       updated_at, parent_run_id, parent_step, config, metadata::text AS metadata, error
FROM runs
WHERE (%(agent_id)s::text IS NULL OR agent_id = %(agent_id)s)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(idle_seconds)s::float8 IS NULL
       OR updated_at < now() - make_interval(secs => %(idle_seconds)s))
ORDER BY updated_at DESC, run_id
LIMIT %(limit)s;

-- name: set_status
UPDATE runs SET status = %(status)s, error = %(error)s, updated_at = now()
WHERE run_id = %(run_id)s
RETURNING run_id;

-- name: commit_steps
-- Commits a batch of steps, each of a different run, in one statement: one round trip
-- and one transaction on an autocommit connection (group commit). Every array holds one
-- element per write (blobs and history: one per row, tagged with their run).
-- Each run's row in runs is that write's guard: its UPDATE matches only if the head is
-- the one the writer read (step and write version) and, when fenced, the lease epoch is
-- current. Every other write below joins the guards that matched, so a refused write
-- writes nothing, and the writes of the other runs go ahead. RETURNING names the runs
-- whose write landed.
WITH c AS (
    SELECT * FROM unnest(
        %(run_ids)b::uuid[], %(steps)b::bigint[], %(parent_steps)b::bigint[],
        %(kinds)b::text[], %(is_opens)b::boolean[], %(codecs)b::text[], %(payloads)b::bytea[],
        %(state_versions)b::integer[], %(write_versions)b::integer[],
        %(raw_bytes)b::integer[], %(state_bytes)b::bigint[], %(checksums)b::bytea[],
        %(expected_steps)b::bigint[], %(expected_versions)b::integer[], %(epochs)b::bigint[],
        %(snapshot_steps)b::bigint[], %(chain_bytes)b::bigint[], %(prune_belows)b::bigint[],
        %(seal_steps)b::bigint[], %(metadatas)b::text[]
    ) AS c(run_id, step, parent_step, kind, is_open, codec, payload, state_version,
           write_version, raw_bytes, state_bytes, checksum, expected_step, expected_version,
           epoch, snapshot_step, chain_bytes, prune_below, seal_step, metadata)
), head AS (
    UPDATE runs r SET
        head_step     = c.step,
        head_version  = c.write_version,
        head_open     = c.is_open,
        snapshot_step = c.snapshot_step,
        chain_bytes   = c.chain_bytes,
        heartbeat_at  = now(),
        updated_at    = now(),
        metadata      = CASE WHEN c.metadata IS NULL THEN r.metadata
                             ELSE r.metadata || c.metadata::jsonb END
    FROM c
    WHERE r.run_id = c.run_id
      AND r.head_step IS NOT DISTINCT FROM c.expected_step
      AND r.head_version = c.expected_version
      AND (c.epoch IS NULL OR r.lease_epoch = c.epoch)
    RETURNING r.run_id
), new_blobs AS (
    INSERT INTO blobs (run_id, digest, codec, size, data)
    SELECT b.run_id, b.digest, b.codec, b.size, b.data
    FROM unnest(%(blob_run_ids)b::uuid[], %(blob_digests)b::text[], %(blob_codecs)b::text[],
                %(blob_sizes)b::bigint[], %(blob_datas)b::bytea[])
         AS b(run_id, digest, codec, size, data)
    JOIN head USING (run_id)
    ON CONFLICT (run_id, digest) DO NOTHING
), new_history AS (
    INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes)
    SELECT h.run_id, h.seq, c.step, h.item_count, h.codec, h.payload, h.raw_bytes
    FROM unnest(%(history_run_ids)b::uuid[], %(history_seqs)b::bigint[],
                %(history_counts)b::integer[], %(history_codecs)b::text[],
                %(history_payloads)b::bytea[], %(history_raw_bytes)b::integer[])
         AS h(run_id, seq, item_count, codec, payload, raw_bytes)
    JOIN head USING (run_id) JOIN c USING (run_id)
), pruned AS (
    DELETE FROM steps s USING c JOIN head USING (run_id)
    WHERE s.run_id = c.run_id AND s.step < c.prune_below
), sealed AS (
    UPDATE steps s SET is_open = false
    FROM c JOIN head USING (run_id)
    WHERE s.run_id = c.run_id AND s.step = c.seal_step AND s.is_open
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum)
SELECT c.run_id, c.step, c.parent_step, c.kind, c.is_open, c.codec, c.payload,
       c.state_version, c.write_version, c.raw_bytes, c.state_bytes, c.checksum
FROM c JOIN head USING (run_id)
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum, updated_at = now()
WHERE s.is_open
RETURNING s.run_id, s.created_at, s.updated_at;

-- name: commit_probe
-- Why a commit was refused: the run's head and lease, and the step it tried to write.
SELECT r.head_step, r.head_version, r.lease_epoch, s.parent_step, s.checksum, s.is_open,
       s.write_version, s.created_at, s.updated_at
FROM runs r
LEFT JOIN steps s ON s.run_id = r.run_id AND s.step = %(step)s
WHERE r.run_id = %(run_id)s;

-- name: load_chain
-- The newest snapshot at or before the target step plus every step after it up to the
-- target, in step order: everything needed to rebuild one state, in one query.
SELECT s.step, s.parent_step, s.kind, s.is_open, s.codec, s.payload, s.state_version,
       s.write_version, s.raw_bytes, s.state_bytes, s.checksum, s.created_at, s.updated_at
FROM steps s
WHERE s.run_id = %(run_id)s
  AND s.step <= COALESCE(%(step)s::bigint,
                         (SELECT head_step FROM runs WHERE run_id = %(run_id)s))
  AND s.step >= (
      SELECT max(step) FROM steps
      WHERE run_id = %(run_id)s AND kind = 'snapshot'
        AND step <= COALESCE(%(step)s::bigint,
                             (SELECT head_step FROM runs WHERE run_id = %(run_id)s)))
ORDER BY s.step;

-- name: resume_run
-- The run's row and the chain of its head (the newest snapshot up to the head, then every
-- step after it, in step order) in one statement, so both are read at one instant: one
-- row per step, or one row with null step columns when there is no chain. The columns
-- both tables have are the step's; the run's are renamed run_*. The run's config and
-- metadata, the only wide run columns, come on the first row only.
WITH r AS (
    SELECT runs.*, (SELECT max(step) FROM steps
                    WHERE run_id = %(run_id)s AND kind = 'snapshot'
                      AND step <= runs.head_step) AS chain_start
    FROM runs WHERE run_id = %(run_id)s
)
SELECT r.run_id, r.kind AS run_kind, r.agent_id, r.status, r.head_step, r.head_version,
       r.head_open, r.snapshot_step, r.chain_bytes, r.lease_owner, r.lease_expires_at,
       r.lease_epoch, r.heartbeat_at, r.created_at AS run_created_at,
       r.updated_at AS run_updated_at, r.parent_run_id, r.parent_step AS run_parent_step,
       CASE WHEN s.step IS NOT DISTINCT FROM r.chain_start THEN r.config END AS config,
       CASE WHEN s.step IS NOT DISTINCT FROM r.chain_start THEN r.metadata::text END
           AS metadata,
       r.error, s.step, s.parent_step, s.kind, s.is_open, s.codec, s.payload,
       s.state_version, s.write_version, s.raw_bytes, s.state_bytes, s.checksum,
       s.created_at, s.updated_at
FROM r
LEFT JOIN steps s
       ON s.run_id = %(run_id)s AND s.step >= r.chain_start AND s.step <= r.head_step
WHERE r.run_id = %(run_id)s
ORDER BY s.step;

-- name: list_steps
SELECT step, parent_step, kind, is_open, codec, state_version, write_version, raw_bytes,
       length(payload) AS stored_bytes, state_bytes, checksum, created_at, updated_at
FROM steps WHERE run_id = %(run_id)s ORDER BY step;

-- name: prune_steps
DELETE FROM steps WHERE run_id = %(run_id)s AND step < %(below)s;

-- name: copy_history
-- A fork keeps the archived history of the steps up to the one it starts from.
INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes)
SELECT %(to_run_id)s, seq, step, item_count, codec, payload, raw_bytes FROM history
WHERE run_id = %(from_run_id)s AND step <= %(step)s;

-- name: copy_blobs
INSERT INTO blobs (run_id, digest, codec, size, data)
SELECT %(to_run_id)s, digest, codec, size, data FROM blobs WHERE run_id = %(from_run_id)s
ON CONFLICT (run_id, digest) DO NOTHING;

-- name: delete_run
-- One statement so a run disappears whole or not at all.
WITH gone_steps AS (
    DELETE FROM steps WHERE run_id = %(run_id)s
), gone_blobs AS (
    DELETE FROM blobs WHERE run_id = %(run_id)s
), gone_effects AS (
    DELETE FROM effects WHERE run_id = %(run_id)s
), gone_history AS (
    DELETE FROM history WHERE run_id = %(run_id)s
), gone_events AS (
    DELETE FROM events WHERE run_id = %(run_id)s
), gone_threads AS (
    DELETE FROM run_threads WHERE run_id = %(run_id)s
), gone_index AS (
    DELETE FROM step_index WHERE run_id = %(run_id)s
), gone_writes AS (
    DELETE FROM step_writes WHERE run_id = %(run_id)s
)
DELETE FROM runs WHERE run_id = %(run_id)s RETURNING run_id;

-- name: insert_blob
INSERT INTO blobs (run_id, digest, codec, size, data)
VALUES (%(run_id)s, %(digest)s, %(codec)s, %(size)s, %(data)s)
ON CONFLICT (run_id, digest) DO NOTHING;

-- name: get_blob
SELECT digest, codec, size, data FROM blobs
WHERE run_id = %(run_id)s AND digest = %(digest)s;

-- name: list_blobs
SELECT digest, codec, size, length(data) AS stored_bytes, created_at FROM blobs
WHERE run_id = %(run_id)s ORDER BY digest;

-- name: delete_blob
DELETE FROM blobs WHERE run_id = %(run_id)s AND digest = %(digest)s;
