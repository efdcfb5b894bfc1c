-- The PostgreSQL driver's own statements: migrations bookkeeping and the commit itself.
-- Only the driver (src/agentckpt/_backends/) runs them; the rooms above it use the store.

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

-- name: commit_steps
-- Commits a batch of steps, each of a different run, in one statement: one round trip
-- and one transaction on an autocommit connection (group commit). Every array holds one
-- element per write (blobs and history: one per row, tagged with their run).
-- Each run's row in runs is that write's guard: its UPDATE matches only if the head is
-- the one the writer read (step and write version) and, when fenced, the lease epoch is
-- current. Every other write below joins the guards that matched, so a refused write
-- writes nothing, and the writes of the other runs go ahead. RETURNING names the runs
-- whose write landed. write_token tells a writer's own retry from another writer's
-- commit of the same content (Store.commit compares it when the guard refuses).
WITH c AS (
    SELECT * FROM unnest(
        %(run_ids)b::uuid[], %(steps)b::bigint[], %(parent_steps)b::bigint[],
        %(kinds)b::text[], %(is_opens)b::boolean[], %(codecs)b::text[], %(payloads)b::bytea[],
        %(state_versions)b::integer[], %(write_versions)b::integer[],
        %(raw_bytes)b::integer[], %(state_bytes)b::bigint[], %(checksums)b::bytea[],
        %(expected_steps)b::bigint[], %(expected_versions)b::integer[], %(epochs)b::bigint[],
        %(snapshot_steps)b::bigint[], %(chain_bytes)b::bigint[], %(prune_belows)b::bigint[],
        %(seal_steps)b::bigint[], %(metadatas)b::text[], %(tokens)b::bytea[]
    ) AS c(run_id, step, parent_step, kind, is_open, codec, payload, state_version,
           write_version, raw_bytes, state_bytes, checksum, expected_step, expected_version,
           epoch, snapshot_step, chain_bytes, prune_below, seal_step, metadata, token)
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
    -- The = ANY(run_ids) filters repeat the join so that Citus (and hash partitions)
    -- prune to the shards of the batch's runs; without them every commit touched every
    -- shard, a two-phase commit across all workers.
    WHERE r.run_id = c.run_id AND r.run_id = ANY(%(run_ids)b::uuid[])
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
    WHERE s.run_id = c.run_id AND s.run_id = ANY(%(run_ids)b::uuid[])
      AND s.step < c.prune_below
), sealed AS (
    UPDATE steps s SET is_open = false
    FROM c JOIN head USING (run_id)
    WHERE s.run_id = c.run_id AND s.run_id = ANY(%(run_ids)b::uuid[])
      AND s.step = c.seal_step AND s.is_open
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
SELECT c.run_id, c.step, c.parent_step, c.kind, c.is_open, c.codec, c.payload,
       c.state_version, c.write_version, c.raw_bytes, c.state_bytes, c.checksum, c.token,
       now()
FROM c JOIN head USING (run_id)
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token,
    -- EXCLUDED, not now(): Citus allows only IMMUTABLE functions in DO UPDATE SET.
    updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.run_id, s.created_at, s.updated_at;

-- name: commit_step
-- commit_steps for a batch of one write without blobs or history (the lone agent's every
-- commit): the same guard, prune, seal and step, and the same rows back, with scalar
-- parameters instead of 21 arrays unnested, so the client encodes no array and psycopg
-- keeps the statement prepared. On a hash-partitioned store the run_id parameter prunes
-- every statement to its partition. A refused guard writes nothing and returns no row.
WITH head AS (
    UPDATE runs r SET
        head_step     = %(step)b::bigint,
        head_version  = %(write_version)b::integer,
        head_open     = %(is_open)b::boolean,
        snapshot_step = %(snapshot_step)b::bigint,
        chain_bytes   = %(chain_bytes)b::bigint,
        heartbeat_at  = now(),
        updated_at    = now(),
        metadata      = CASE WHEN %(metadata)b::text IS NULL THEN r.metadata
                             ELSE r.metadata || %(metadata)b::text::jsonb END
    WHERE r.run_id = %(run_id)b::uuid
      AND r.head_step IS NOT DISTINCT FROM %(expected_step)b::bigint
      AND r.head_version = %(expected_version)b::integer
      AND (%(epoch)b::bigint IS NULL OR r.lease_epoch = %(epoch)b::bigint)
    RETURNING r.run_id
), pruned AS (
    DELETE FROM steps s USING head
    WHERE s.run_id = head.run_id AND s.run_id = %(run_id)b::uuid
      AND s.step < %(prune_below)b::bigint
), sealed AS (
    UPDATE steps s SET is_open = false
    FROM head
    WHERE s.run_id = head.run_id AND s.run_id = %(run_id)b::uuid
      AND s.step = %(seal_step)b::bigint AND s.is_open
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
SELECT head.run_id, %(step)b::bigint, %(parent_step)b::bigint, %(kind)b::text,
       %(is_open)b::boolean, %(codec)b::text, %(payload)b::bytea,
       %(state_version)b::integer, %(write_version)b::integer, %(raw_bytes)b::integer,
       %(state_bytes)b::bigint, %(checksum)b::bytea, %(write_token)b::bytea, now()
FROM head
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token, updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.run_id, s.created_at, s.updated_at;

-- name: commit_step_plain
-- commit_step for a write that prunes and seals nothing (most deltas, most conversation
-- writes): the same guard and step row without the prune and seal parts, whose DELETE
-- and UPDATE, even when their filter is false, cost the server about a fifth of the
-- statement. The guard also checks that the write prunes and seals nothing, so a write
-- sent here by mistake is refused, never written without its prune or seal.
WITH head AS (
    UPDATE runs r SET
        head_step     = %(step)b::bigint,
        head_version  = %(write_version)b::integer,
        head_open     = %(is_open)b::boolean,
        snapshot_step = %(snapshot_step)b::bigint,
        chain_bytes   = %(chain_bytes)b::bigint,
        heartbeat_at  = now(),
        updated_at    = now(),
        metadata      = CASE WHEN %(metadata)b::text IS NULL THEN r.metadata
                             ELSE r.metadata || %(metadata)b::text::jsonb END
    WHERE r.run_id = %(run_id)b::uuid
      AND r.head_step IS NOT DISTINCT FROM %(expected_step)b::bigint
      AND r.head_version = %(expected_version)b::integer
      AND (%(epoch)b::bigint IS NULL OR r.lease_epoch = %(epoch)b::bigint)
      AND %(prune_below)b::bigint IS NULL AND %(seal_step)b::bigint IS NULL
    RETURNING r.run_id
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
SELECT head.run_id, %(step)b::bigint, %(parent_step)b::bigint, %(kind)b::text,
       %(is_open)b::boolean, %(codec)b::text, %(payload)b::bytea,
       %(state_version)b::integer, %(write_version)b::integer, %(raw_bytes)b::integer,
       %(state_bytes)b::bigint, %(checksum)b::bytea, %(write_token)b::bytea, now()
FROM head
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token, updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.run_id, s.created_at, s.updated_at;

-- name: commit_chain
-- A run's next steps in one statement (the overlapped run loop's steps queued behind the
-- one in flight, each guarded by the one before): the first step's guard, the run's head
-- moved to the last step, every step inserted. The same rows as writing them one after
-- the other: a step the chain's own snapshot prunes is not inserted (the prune here sees
-- only rows from before the statement), and only the first step may seal one. A refused
-- guard writes nothing and returns no row.
WITH c AS (
    SELECT * FROM unnest(
        %(steps)b::bigint[], %(parent_steps)b::bigint[], %(kinds)b::text[],
        %(is_opens)b::boolean[], %(codecs)b::text[], %(payloads)b::bytea[],
        %(state_versions)b::integer[], %(write_versions)b::integer[],
        %(raw_bytes)b::integer[], %(state_bytes)b::bigint[], %(checksums)b::bytea[],
        %(tokens)b::bytea[]
    ) AS c(step, parent_step, kind, is_open, codec, payload, state_version, write_version,
           raw_bytes, state_bytes, checksum, token)
), head AS (
    UPDATE runs r SET
        head_step     = %(head_step)b::bigint,
        head_version  = %(head_version)b::integer,
        head_open     = %(head_open)b::boolean,
        snapshot_step = %(snapshot_step)b::bigint,
        chain_bytes   = %(chain_bytes)b::bigint,
        heartbeat_at  = now(),
        updated_at    = now()
    WHERE r.run_id = %(run_id)b::uuid
      AND r.head_step IS NOT DISTINCT FROM %(expected_step)b::bigint
      AND r.head_version = %(expected_version)b::integer
      AND (%(epoch)b::bigint IS NULL OR r.lease_epoch = %(epoch)b::bigint)
    RETURNING r.run_id
), pruned AS (
    DELETE FROM steps s USING head
    WHERE s.run_id = head.run_id AND s.run_id = %(run_id)b::uuid
      AND s.step < %(prune_below)b::bigint
), sealed AS (
    UPDATE steps s SET is_open = false
    FROM head
    WHERE s.run_id = head.run_id AND s.run_id = %(run_id)b::uuid
      AND s.step = %(seal_step)b::bigint AND s.is_open
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
SELECT head.run_id, c.step, c.parent_step, c.kind, c.is_open, c.codec, c.payload,
       c.state_version, c.write_version, c.raw_bytes, c.state_bytes, c.checksum, c.token,
       now()
FROM c CROSS JOIN head
WHERE %(prune_below)b::bigint IS NULL OR c.step >= %(prune_below)b::bigint
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token, updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.step, s.created_at, s.updated_at;

-- name: commit_chain_plain
-- commit_chain for steps that prune and seal nothing (as commit_step_plain is to
-- commit_step): no prune or seal part, and the guard checks that none is wanted.
WITH c AS (
    SELECT * FROM unnest(
        %(steps)b::bigint[], %(parent_steps)b::bigint[], %(kinds)b::text[],
        %(is_opens)b::boolean[], %(codecs)b::text[], %(payloads)b::bytea[],
        %(state_versions)b::integer[], %(write_versions)b::integer[],
        %(raw_bytes)b::integer[], %(state_bytes)b::bigint[], %(checksums)b::bytea[],
        %(tokens)b::bytea[]
    ) AS c(step, parent_step, kind, is_open, codec, payload, state_version, write_version,
           raw_bytes, state_bytes, checksum, token)
), head AS (
    UPDATE runs r SET
        head_step     = %(head_step)b::bigint,
        head_version  = %(head_version)b::integer,
        head_open     = %(head_open)b::boolean,
        snapshot_step = %(snapshot_step)b::bigint,
        chain_bytes   = %(chain_bytes)b::bigint,
        heartbeat_at  = now(),
        updated_at    = now()
    WHERE r.run_id = %(run_id)b::uuid
      AND r.head_step IS NOT DISTINCT FROM %(expected_step)b::bigint
      AND r.head_version = %(expected_version)b::integer
      AND (%(epoch)b::bigint IS NULL OR r.lease_epoch = %(epoch)b::bigint)
      AND %(prune_below)b::bigint IS NULL AND %(seal_step)b::bigint IS NULL
    RETURNING r.run_id
)
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
SELECT head.run_id, c.step, c.parent_step, c.kind, c.is_open, c.codec, c.payload,
       c.state_version, c.write_version, c.raw_bytes, c.state_bytes, c.checksum, c.token,
       now()
FROM c CROSS JOIN head
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token, updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.step, s.created_at, s.updated_at;

-- The routed commit: on Citus, commit_steps's unnest() makes every step a subplan whose
-- intermediate results Citus sends to every worker, so each commit became a two-phase
-- commit across all of them. A distributed store instead commits each run with these
-- statements, each filtered on one run_id (Citus routes it to that run's shard, one task
-- on one worker), a batch's runs of one worker in one transaction (routing_async.py).

-- name: routed_nodes
-- The worker (node group) holding each run's shard.
SELECT r.run_id, p.groupid
FROM unnest(%(run_ids)s::uuid[]) AS r(run_id)
JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('runs', r.run_id);

-- name: routed_guard
UPDATE runs r SET
    head_step     = %(step)s,
    head_version  = %(write_version)s,
    head_open     = %(is_open)s,
    snapshot_step = %(snapshot_step)s,
    chain_bytes   = %(chain_bytes)s,
    heartbeat_at  = now(),
    updated_at    = now(),
    metadata      = CASE WHEN %(metadata)s::text IS NULL THEN r.metadata
                         ELSE r.metadata || %(metadata)s::jsonb END
WHERE r.run_id = %(run_id)s
  AND r.head_step IS NOT DISTINCT FROM %(expected_step)s::bigint
  AND r.head_version = %(expected_version)s
  AND (%(epoch)s::bigint IS NULL OR r.lease_epoch = %(epoch)s::bigint)
RETURNING r.run_id;

-- name: routed_blob
INSERT INTO blobs (run_id, digest, codec, size, data)
VALUES (%(run_id)s, %(digest)s, %(codec)s, %(size)s, %(data)s)
ON CONFLICT (run_id, digest) DO NOTHING;

-- name: routed_history
INSERT INTO history (run_id, seq, step, item_count, codec, payload, raw_bytes)
VALUES (%(run_id)s, %(seq)s, %(step)s, %(item_count)s, %(codec)s, %(payload)s, %(raw_bytes)s);

-- name: routed_prune
DELETE FROM steps WHERE run_id = %(run_id)s AND step < %(prune_below)s;

-- name: routed_seal
UPDATE steps SET is_open = false
WHERE run_id = %(run_id)s AND step = %(seal_step)s AND is_open;

-- name: routed_step
INSERT INTO steps AS s (run_id, step, parent_step, kind, is_open, codec, payload,
                        state_version, write_version, raw_bytes, state_bytes, checksum,
                        write_token, updated_at)
VALUES (%(run_id)s, %(step)s, %(parent_step)s, %(kind)s, %(is_open)s, %(codec)s, %(payload)s,
        %(state_version)s, %(write_version)s, %(raw_bytes)s, %(state_bytes)s, %(checksum)s,
        %(token)s, now())
ON CONFLICT (run_id, step) DO UPDATE SET
    parent_step = EXCLUDED.parent_step, kind = EXCLUDED.kind, is_open = EXCLUDED.is_open,
    codec = EXCLUDED.codec, payload = EXCLUDED.payload, state_version = EXCLUDED.state_version,
    write_version = EXCLUDED.write_version, raw_bytes = EXCLUDED.raw_bytes,
    state_bytes = EXCLUDED.state_bytes, checksum = EXCLUDED.checksum,
    write_token = EXCLUDED.write_token, updated_at = EXCLUDED.updated_at
WHERE s.is_open
RETURNING s.run_id, s.created_at, s.updated_at;

-- name: routed_claim_orphans
-- runs_claim_orphans on Citus, which refuses FOR UPDATE across shards: the candidates are
-- read from every shard, then claimed by one UPDATE whose WHERE repeats the expiry test.
-- Two recovery workers racing for a run: the second waits for the first's row lock, then
-- re-checks the WHERE against the claimed row (its lease is live now) and skips it, so a
-- run is still claimed once; it waits where SKIP LOCKED would not.
UPDATE runs r SET
    lease_owner      = %(owner)s,
    lease_epoch      = r.lease_epoch + 1,
    lease_expires_at = now() + make_interval(secs => %(ttl)s),
    heartbeat_at     = now()
WHERE r.run_id IN (
        SELECT run_id FROM runs
        WHERE status = 'active'
          AND kind = %(kind)s
          AND agent_id IN (SELECT jsonb_array_elements_text(%(agent_ids)s::jsonb))
          AND lease_expires_at < now()
        ORDER BY lease_expires_at, run_id
        LIMIT %(limit)s)
  AND r.status = 'active' AND r.lease_expires_at < now()
RETURNING r.run_id, r.lease_owner, r.lease_epoch, r.lease_expires_at;
