"""The PostgreSQL statements that scope one table to the tenant of the transaction.

Migration 0010 applies them to every table of :data:`~agentckpt.tenancy.TENANT_TABLES`;
a later migration that adds a table runs :func:`tenant_policy_sql` for it (pasted in, as
migrations are plain SQL files), and ``docs/security.md`` shows the roles to create.
"""

from __future__ import annotations

from agentckpt.tenancy.names import DEFAULT_TENANT, TENANT_SETTING

__all__ = ["POLICY_NAME", "tenant_policy_sql", "tenant_predicate"]

POLICY_NAME = "tenant_isolation"


def tenant_predicate() -> str:
    """The row filter of every policy: the row's tenant is the transaction's.

    ``current_setting(..., true)`` is NULL when nothing set it (a tenant-less session
    sees nothing) and '' after a transaction that set it ended (matches no row: a CHECK
    keeps '' out of ``tenant_id``).
    """
    return f"tenant_id = current_setting('{TENANT_SETTING}', true)"


def tenant_default() -> str:
    """The column default: the transaction's tenant, or the default tenant when unset."""
    return f"COALESCE(NULLIF(current_setting('{TENANT_SETTING}', true), ''), '{DEFAULT_TENANT}')"


def tenant_policy_sql(table: str) -> str:
    """The statements that add ``tenant_id`` to ``table`` and bind every role to it.

    ``FORCE ROW LEVEL SECURITY`` binds the table's owner too; only superusers and roles
    with ``BYPASSRLS`` pass it.
    """
    predicate = tenant_predicate()
    return (
        f"ALTER TABLE {table} ADD COLUMN tenant_id text NOT NULL DEFAULT '{DEFAULT_TENANT}'\n"
        f"    CONSTRAINT {table}_tenant_named CHECK (tenant_id <> '');\n"
        f"ALTER TABLE {table} ALTER COLUMN tenant_id SET DEFAULT {tenant_default()};\n"
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY {POLICY_NAME} ON {table}\n"
        f"    USING ({predicate}) WITH CHECK ({predicate});\n"
    )
