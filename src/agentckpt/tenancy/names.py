"""Tenant names, the default tenant and the PostgreSQL setting that carries the tenant."""

from __future__ import annotations

import re
from typing import Final

from agentckpt.errors import TenantError

__all__ = ["DEFAULT_TENANT", "TENANT_SETTING", "check_tenant"]

# The tenant of a store opened without one, and of every row that predates tenants
# (migration 0010 gives them this value). Not the empty string: PostgreSQL reports a
# custom setting as '' once a transaction that set it has ended, so '' must never match
# a stored row (a CHECK refuses it), or a pooled connection would see this tenant's rows
# without the store having set anything.
DEFAULT_TENANT: Final = "default"
# The transaction-local setting (set_config(..., true)) the PostgreSQL policies read.
TENANT_SETTING: Final = "agentckpt.tenant"
# Letters, digits and . _ : @ - ; no spaces or quotes, so a tenant is safe in logs, URLs
# and a SQL literal alike.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


def check_tenant(tenant: object) -> str:
    """``tenant`` if it is a valid tenant name, else :class:`TenantError` saying why.

    >>> check_tenant("acme")
    'acme'
    """
    if not isinstance(tenant, str):
        raise TenantError(f"a tenant must be a str, not {type(tenant).__name__}")
    if not _NAME.fullmatch(tenant):
        raise TenantError(
            f"tenant {tenant!r} is not a valid name: 1 to 128 characters, letters, digits "
            "and . _ : @ -, starting with a letter or digit"
        )
    return tenant
