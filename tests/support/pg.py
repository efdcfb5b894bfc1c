"""Find a PostgreSQL server for the tests.

In order: the DSN in ``AGENTCKPT_TEST_PG_DSN``; a local server (127.0.0.1:5432 or the
default Unix socket); a throwaway cluster that pytest-postgresql starts from the
installed binaries (not as root: initdb refuses root). With ``CI=true`` a missing
server fails the run instead of skipping the PostgreSQL tests.
"""

from __future__ import annotations

import os
import shutil

import psycopg

ENV_DSN = "AGENTCKPT_TEST_PG_DSN"
LOCAL_CANDIDATES = (
    "postgresql://127.0.0.1:5432/postgres?connect_timeout=2",
    "postgresql:///postgres?connect_timeout=2",
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def can_connect(dsn: str) -> str | None:
    """None if a connection works, else the reason it does not."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)


def find_server() -> tuple[str | None, str]:
    """``(dsn, how)`` for an existing server, or ``(None, why not)``."""
    explicit = os.environ.get(ENV_DSN)
    if explicit:
        reason = can_connect(explicit)
        if reason is None:
            return explicit, f"{ENV_DSN}"
        return None, f"{ENV_DSN} is set but does not connect: {reason}"
    reasons = []
    for dsn in LOCAL_CANDIDATES:
        reason = can_connect(dsn)
        if reason is None:
            return dsn, "local server"
        reasons.append(f"{dsn.split('?')[0]}: {reason}")
    return None, "; ".join(reasons)


def can_start_cluster() -> str | None:
    """None if pytest-postgresql can start a throwaway cluster here, else why not."""
    if shutil.which("pg_ctl") is None:
        return "no pg_ctl on PATH"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "running as root (initdb refuses root)"
    return None
