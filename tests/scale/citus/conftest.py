"""The store's tests on a real Citus cluster: ``url`` is a Citus store, distributed by
agentckpt itself when it migrated.

One schema is migrated (and distributed) once per session; each test gets it emptied
(DELETE of every table but ``schema_migrations``), since distributing ten tables takes
about a second and a fresh schema per test would cost minutes.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from agentckpt import Store
from tests.clusters.citus import CitusCluster
from tests.scale.reuse import TABLES

SCHEMA = "scale_citus"


@pytest.fixture(scope="session")
def citus_store_url(citus_cluster: CitusCluster) -> str:
    """A store URL on the Citus coordinator, migrated and distributed once."""
    url = f"{citus_cluster.url}?schema={SCHEMA}"
    Store.connect(url).close()
    return url


def empty(url: str) -> None:
    """Delete every row of the store (its schema stays as migrated)."""
    base = url.split("?")[0]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"SET search_path = {SCHEMA}")
        for table in TABLES:
            conn.execute(f"DELETE FROM {table}")


@pytest.fixture(params=["citus"])
def url(citus_store_url: str) -> str:
    """The session's Citus store, emptied for this test."""
    empty(citus_store_url)
    # A name of its own, as test_failures.py's url gives: its tests kill backends by it.
    return f"{citus_store_url}&application_name=agentckpt_test_{uuid.uuid4().hex[:12]}"
