-- Tenants (issue 14): every row of a run carries its tenant (see the PostgreSQL migration
-- 0010). SQLite has no row-level security: the store filters every query on the tenant
-- it was opened for, a convenience for one application's file, not a security boundary.
-- Rows written before this migration belong to the tenant 'default'.

ALTER TABLE runs ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE steps ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE blobs ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE effects ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE history ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE events ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE run_threads ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE step_index ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');
ALTER TABLE step_writes ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default' CHECK (tenant_id <> '');

-- A tenant's runs, for listing them.
CREATE INDEX runs_tenant ON runs (tenant_id);
