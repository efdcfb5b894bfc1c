"""Which store a command works on: ``--url``, else ``$AGENTCKPT_URL``.

Commands that only read never create anything: a SQLite path that does not exist is an
error (a typo must not silently create an empty database), and the schema is not
migrated behind the user's back.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from agentckpt._backends.factory import parse_url
from agentckpt.errors import ConfigurationError, MigrationError
from agentckpt.store.store import Store
from agentckpt.tenancy import check_tenant

ENV_URL = "AGENTCKPT_URL"
ENV_TENANT = "AGENTCKPT_TENANT"
DEMO_URL = "sqlite:///agentckpt-demo.db"


def store_url(args: argparse.Namespace, *, default: str | None = None) -> str:
    """The URL given with ``--url``, else ``$AGENTCKPT_URL``, else ``default``; with
    ``--tenant`` (or ``$AGENTCKPT_TENANT``) the URL's ``tenant`` setting names it."""
    url = getattr(args, "url", None) or os.environ.get(ENV_URL) or default
    if not url:
        raise ConfigurationError(
            f"no store selected: pass --url URL or set {ENV_URL} "
            "(e.g. sqlite:///agent.db or postgresql://user@host/db)"
        )
    tenant = getattr(args, "tenant", None) or os.environ.get(ENV_TENANT)
    if tenant:
        # Checked here: the name goes into the URL's query string as it is.
        url = f"{url}{'&' if '?' in str(url) else '?'}tenant={check_tenant(tenant)}"
    return str(url)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL, None for PostgreSQL or ``:memory:``."""
    target = parse_url(url)
    if target.dialect != "sqlite" or target.location == ":memory:":
        return None
    return Path(target.location)


def open_store(url: str, *, writable: bool = False) -> Store:
    """Connect for a command.

    ``writable`` commands may create a SQLite file and apply pending migrations; the
    others refuse a missing file and an out-of-date schema with an error saying what
    to run.
    """
    if writable:
        return Store.connect(url)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise ConfigurationError(
            f"no SQLite database at {path.resolve()}; check the path in the URL "
            "(run `agentckpt migrate` to create an empty store there)"
        )
    store = Store.connect(url, migrate=False)
    try:
        require_schema(store)
    except BaseException:
        store.close()
        raise
    return store


def pending_migrations(store: Store) -> list[int]:
    """Migration versions this agentckpt ships that the database has not applied."""
    from agentckpt._backends.sql import load_migrations

    dialect = "postgres" if store.backend.dialect == "postgresql" else "sqlite"
    applied = set(store.backend.applied_migrations())
    return [m.version for m in load_migrations(dialect) if m.version not in applied]


def require_schema(store: Store) -> None:
    """MigrationError unless every shipped migration is applied."""
    pending = pending_migrations(store)
    if pending:
        raise MigrationError(
            f"the store's schema is not up to date (pending migrations: "
            f"{', '.join(map(str, pending))}); run `agentckpt migrate` first"
        )
