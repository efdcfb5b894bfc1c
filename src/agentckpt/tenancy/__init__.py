"""Tenants: which rows of a shared database a store may see and write.

A store opened with ``Store.connect(url, tenant="acme")`` reads and writes only the
rows of tenant ``acme``; a store opened without a tenant uses :data:`DEFAULT_TENANT`, the
tenant every row written before tenants existed belongs to. On PostgreSQL row-level
security enforces it (a security boundary, for roles without ``BYPASSRLS``); on SQLite
every query filters on it (a convenience, not a boundary). See ``docs/security.md``.
"""

from __future__ import annotations

from agentckpt.tenancy.names import DEFAULT_TENANT, TENANT_SETTING, check_tenant
from agentckpt.tenancy.tables import TENANT_TABLES

__all__ = ["DEFAULT_TENANT", "TENANT_SETTING", "TENANT_TABLES", "check_tenant"]
