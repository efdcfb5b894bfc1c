-- Tenants (issue 14): every row of a run carries its tenant, and on PostgreSQL row-level
-- security binds every role but superusers and BYPASSRLS roles to the tenant of the
-- transaction, which the store sets with set_config('agentckpt.tenant', <tenant>, true)
-- at the start of each transaction (transaction-local, so it works behind PgBouncer in
-- transaction mode). FORCE ROW LEVEL SECURITY binds the tables' owner as well.
--
-- Rows written before this migration belong to the tenant 'default', the tenant of a
-- store opened without one. The column default is the transaction's tenant, so the
-- store's INSERT statements need not name it; WITH CHECK refuses a row of another
-- tenant. A session that set no tenant sees no row (current_setting(..., true) is NULL),
-- and '' (what PostgreSQL reports once a transaction that set it ended) matches no row:
-- tenant_id <> '' is checked.
--
-- run_id stays every table's key and the Citus distribution column: tenant_id is a plain
-- column, filtered by the policies, never part of a key.
--
-- For later migrations: FORCE binds the owner that migrates too, so a migration that reads
-- or rewrites rows sees none unless it runs as a superuser or a BYPASSRLS role (or sets
-- each tenant in turn); one that only changes the schema is not affected.
--
-- The tables: agentckpt.tenancy.TENANT_TABLES, one per line; a table that a migration
-- numbered below this one adds is one more line here (and in the SQLite migration).
-- The statements are agentckpt.tenancy.policies.tenant_policy_sql(table).
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'runs',
        'steps',
        'blobs',
        'effects',
        'history',
        'events',
        'run_threads',
        'step_index',
        'step_writes'
    ] LOOP
        EXECUTE format(
            'ALTER TABLE %1$I ADD COLUMN tenant_id text NOT NULL DEFAULT ''default'' '
            'CONSTRAINT %2$I CHECK (tenant_id <> '''')', t, t || '_tenant_named');
        EXECUTE format(
            'ALTER TABLE %I ALTER COLUMN tenant_id SET DEFAULT '
            'COALESCE(NULLIF(current_setting(''agentckpt.tenant'', true), ''''), ''default'')', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I '
            'USING (tenant_id = current_setting(''agentckpt.tenant'', true)) '
            'WITH CHECK (tenant_id = current_setting(''agentckpt.tenant'', true))', t);
    END LOOP;
END
$$;

-- A tenant's runs, for listing them.
CREATE INDEX runs_tenant ON runs (tenant_id);
