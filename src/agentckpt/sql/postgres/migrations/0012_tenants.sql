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
-- One block per table of agentckpt.tenancy.TENANT_TABLES, as
-- agentckpt.tenancy.policies.tenant_policy_sql(table) writes it.

ALTER TABLE runs ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT runs_tenant_named CHECK (tenant_id <> '');
ALTER TABLE runs ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE runs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON runs
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE steps ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT steps_tenant_named CHECK (tenant_id <> '');
ALTER TABLE steps ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE steps ENABLE ROW LEVEL SECURITY;
ALTER TABLE steps FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON steps
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE blobs ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT blobs_tenant_named CHECK (tenant_id <> '');
ALTER TABLE blobs ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE blobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON blobs
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE effects ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT effects_tenant_named CHECK (tenant_id <> '');
ALTER TABLE effects ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE effects ENABLE ROW LEVEL SECURITY;
ALTER TABLE effects FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON effects
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE history ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT history_tenant_named CHECK (tenant_id <> '');
ALTER TABLE history ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE history ENABLE ROW LEVEL SECURITY;
ALTER TABLE history FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON history
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE events ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT events_tenant_named CHECK (tenant_id <> '');
ALTER TABLE events ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE run_threads ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT run_threads_tenant_named CHECK (tenant_id <> '');
ALTER TABLE run_threads ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE run_threads ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_threads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_threads
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE step_index ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT step_index_tenant_named CHECK (tenant_id <> '');
ALTER TABLE step_index ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE step_index ENABLE ROW LEVEL SECURITY;
ALTER TABLE step_index FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON step_index
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

ALTER TABLE step_writes ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
    CONSTRAINT step_writes_tenant_named CHECK (tenant_id <> '');
ALTER TABLE step_writes ALTER COLUMN tenant_id SET DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default');
ALTER TABLE step_writes ENABLE ROW LEVEL SECURITY;
ALTER TABLE step_writes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON step_writes
    USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

-- A tenant's runs, for listing them.
CREATE INDEX runs_tenant ON runs (tenant_id);
