"""The store's tests on hash partitions: ``url`` is a PostgreSQL store migrated with
``partitions=4`` (every run_id table ``PARTITION BY HASH (run_id)``, 4 partitions).

One database is migrated once per session; each test gets it emptied (DELETE of every
table but ``schema_migrations``), which is cheaper than a database per test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from agentckpt import Store
from tests.scale.reuse import TABLES

PARTITIONS = 4


def _on(dsn: str, dbname: str) -> str:
    base = dsn.split("?")[0]
    return base.rsplit("/", 1)[0] + "/" + dbname


@pytest.fixture(scope="session")
def partitioned_url(pg_server_dsn: str) -> Iterator[str]:
    """A store URL on a database of its own, migrated with ``partitions=4``."""
    name = f"agentckpt_parts_{uuid.uuid4().hex[:8]}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = f"{_on(pg_server_dsn, name)}?schema=agentckpt&partitions={PARTITIONS}"
        Store.connect(url).close()
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["partitions"])
def url(partitioned_url: str) -> str:
    """The session's partitioned store, emptied for this test."""
    with psycopg.connect(partitioned_url.split("?")[0], autocommit=True) as conn:
        conn.execute("SET search_path = agentckpt")
        # DELETE, not TRUNCATE: a few rows each, and TRUNCATE of 45 relations made new
        # files for each of them (a second per test on a loaded machine).
        for table in TABLES:
            conn.execute(f"DELETE FROM {table}")
    # A name of its own, as test_failures.py's url gives: its tests kill backends by it.
    return f"{partitioned_url}&application_name=agentckpt_test_{uuid.uuid4().hex[:12]}"
