"""Stores behind PgBouncer in transaction-pooling mode (the ``pgbouncer`` fixture, in
front of ``pg_cluster``), as docs/operations.md ("Behind PgBouncer") says to run them:
``prepare_threshold=none`` in the URL, and the session settings agentckpt would send at
connect (PgBouncer drops them) set on the server for the database instead.

One database is migrated once per session; each test gets it emptied.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from agentckpt import Store
from tests.clusters.cluster import PgCluster
from tests.clusters.pgbouncer import PgBouncer
from tests.scale.reuse import TABLES

# What the docs tell users to set for a database they reach through PgBouncer.
SERVER_SETTINGS = {"search_path": "agentckpt", "timezone": "UTC", "lock_timeout": "10s"}


def prepare(cluster: PgCluster, name: str) -> None:
    """Set the documented settings on database ``name``."""
    for setting, value in SERVER_SETTINGS.items():
        cluster.sql(f"ALTER DATABASE \"{name}\" SET {setting} = '{value}'")


def bounced(bouncer: PgBouncer, name: str) -> str:
    """The store URL of database ``name`` through the bouncer."""
    return f"{bouncer.url_for(name)}?schema=agentckpt&prepare_threshold=none"


@pytest.fixture(scope="session")
def bounced_url(pg_cluster: PgCluster, pgbouncer: PgBouncer) -> Iterator[str]:
    """A database set up as the docs say and migrated through the bouncer."""
    name = f"bounce_{uuid.uuid4().hex[:8]}"
    pg_cluster.sql(f'CREATE DATABASE "{name}"')
    prepare(pg_cluster, name)
    url = bounced(pgbouncer, name)
    Store.connect(url).close()
    yield url
    pg_cluster.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["pgbouncer"])
def url(pg_cluster: PgCluster, bounced_url: str) -> str:
    """The session's store through PgBouncer in transaction mode, emptied for this test."""
    with psycopg.connect(bounced_url.split("?")[0], prepare_threshold=None) as conn:
        for table in TABLES:
            conn.execute(f"DELETE FROM agentckpt.{table}")
    # A name of its own, as test_failures.py's url gives: its tests kill backends by it.
    return f"{bounced_url}&application_name=agentckpt_test_{uuid.uuid4().hex[:12]}"
