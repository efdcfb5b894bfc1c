-- Every payload column holds bytes that are already zstd-compressed (its codec column
-- says so), that zstd could not make smaller, or that are encrypted: PostgreSQL's own
-- compression (pglz by default) cannot shrink any of them, yet TOAST tries it on every
-- value too long for its row before moving the value out of line. STORAGE EXTERNAL moves
-- it out of line at once, uncompressed, which is how such a value ends up stored anyway:
-- the bytes on disk do not change, the failed pglz pass is gone (1,000 inserts of 16 KB
-- zstd payloads, server side, median of 7: 139.5 ms with pglz, 90.1 ms with EXTERNAL;
-- docs/benchmarks.md). runs.config, exact JSON that the store does not compress, keeps
-- the default.
--
-- Citus refuses ALTER COLUMN ... SET STORAGE on a distributed table, so a table that an
-- earlier migrate distributed keeps the default there (only the CPU above is at stake);
-- a store distributed after this migration gets its shards made with EXTERNAL.
-- It applies to values written from now on; existing values stay as they are.
DO $$
DECLARE
    t text;
    col text;
    distributed boolean;
BEGIN
    FOR t, col IN VALUES
        ('steps', 'payload'),
        ('blobs', 'data'),
        ('effects', 'payload'),
        ('history', 'payload'),
        ('events', 'payload'),
        ('step_writes', 'payload')
    LOOP
        distributed := false;
        IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
            EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition '
                    'WHERE logicalrelid = to_regclass($1))'
                INTO distributed USING t;
        END IF;
        IF NOT distributed THEN
            EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STORAGE EXTERNAL', t, col);
        END IF;
    END LOOP;
END
$$;
