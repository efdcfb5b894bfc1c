"""What migrate lays out on Citus: every run_id table distributed and co-located with
runs, schema_migrations and data_keys reference tables; idempotent; distribute=off
leaves it alone."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from agentckpt import Store
from agentckpt._backends import postgres
from agentckpt._backends.sql import load_migrations
from tests.clusters.citus import CitusCluster
from tests.scale.citus.conftest import SCHEMA
from tests.scale.reuse import TABLES

_LAYOUT = """
SELECT c.relname, p.partmethod, p.colocationid
FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s
"""


def _layout(cluster: CitusCluster, schema: str) -> dict[str, tuple[str, int]]:
    return {name: (method, colocation) for name, method, colocation in
            cluster.coordinator.sql(_LAYOUT, [schema])}  # fmt: skip


def test_migrate_distributes_every_table_colocated_with_runs(
    citus_cluster: CitusCluster, url: str
) -> None:
    layout = _layout(citus_cluster, SCHEMA)
    assert set(layout) == {*TABLES, "schema_migrations", "data_keys"}
    assert layout["schema_migrations"][0] == "n"
    assert layout["data_keys"][0] == "n"
    assert {layout[t] for t in TABLES} == {("h", layout["runs"][1])}
    with Store.connect(url) as store:  # migrating again changes nothing
        store.migrate()
        assert store.backend.layout_report.changed == ()  # type: ignore[attr-defined]
    assert _layout(citus_cluster, SCHEMA) == layout


def test_distribute_off_leaves_the_tables_local(citus_cluster: CitusCluster) -> None:
    schema = f"local_{uuid.uuid4().hex[:8]}"
    url = f"{citus_cluster.url}?schema={schema}&distribute=off"
    try:
        with Store.connect(url) as store:
            run = store.create_run().run_id
            store.commit(run, {"a": 1})
            assert store.latest(run).state == {"a": 1}
        assert _layout(citus_cluster, schema) == {}
    finally:
        with psycopg.connect(citus_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


_PAYLOAD_STORAGE = """
SELECT a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname LIKE 'steps%%' AND a.attname = 'payload'
"""


def _payload_storage(cluster: CitusCluster, schema: str) -> list[str]:
    """``steps.payload``'s STORAGE on the coordinator's table and every shard."""
    return [row[0] for node in cluster.nodes for row in node.sql(_PAYLOAD_STORAGE, [schema])]


def test_shards_of_a_new_store_keep_payloads_external(
    citus_cluster: CitusCluster, url: str
) -> None:
    found = _payload_storage(citus_cluster, SCHEMA)
    assert len(found) > 1
    assert set(found) == {"e"}


def test_a_distributed_store_takes_the_storage_migration(
    citus_cluster: CitusCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0012 on tables that an earlier migrate distributed: Citus refuses
    ``ALTER COLUMN ... SET STORAGE`` there, so the migration leaves them as they are and
    the store works on."""
    schema = f"upgrade_{uuid.uuid4().hex[:8]}"
    url = f"{citus_cluster.url}?schema={schema}"
    every = load_migrations("postgres")
    try:
        monkeypatch.setattr(postgres, "load_migrations", lambda dialect: every[:11])
        Store.connect(url).close()
        assert set(_layout(citus_cluster, schema)) >= set(TABLES)
        monkeypatch.undo()
        with Store.connect(url) as store:
            run = store.create_run().run_id
            store.commit(run, {"a": "x" * 50_000})
            assert store.latest(run).state == {"a": "x" * 50_000}
        versions = citus_cluster.coordinator.sql(
            f"SELECT max(version) FROM {schema}.schema_migrations"
        )
        assert versions == [(every[-1].version,)]
        found = _payload_storage(citus_cluster, schema)
        assert len(found) > 1
        assert set(found) == {"x"}
    finally:
        with psycopg.connect(citus_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
