"""The store's tests on hash partitions: ``url`` is a PostgreSQL store migrated with
``partitions=4`` (every run_id table ``PARTITION BY HASH (run_id)``, 4 partitions).

A database is migrated once per session and copied for each test
(``CREATE DATABASE ... TEMPLATE``), as the plain PostgreSQL tests do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from agentckpt import Store

PARTITIONS = 4


def _on(dsn: str, dbname: str) -> str:
    base = dsn.split("?")[0]
    return base.rsplit("/", 1)[0] + "/" + dbname


@pytest.fixture(scope="session")
def partitioned_template(pg_server_dsn: str) -> Iterator[str]:
    """A database migrated with ``partitions=4``, which each test's database copies."""
    name = f"agentckpt_parts_{uuid.uuid4().hex[:8]}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        Store.connect(
            f"{_on(pg_server_dsn, name)}?schema=agentckpt&partitions={PARTITIONS}"
        ).close()
        yield name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["partitions"])
def url(pg_server_dsn: str, partitioned_template: str) -> Iterator[str]:
    """A fresh copy of the partitioned store, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{partitioned_template}"')
    yield f"{_on(pg_server_dsn, name)}?schema=agentckpt&partitions={PARTITIONS}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
