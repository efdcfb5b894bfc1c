"""What transaction pooling breaks gets a clear error, not a silent fault."""

from __future__ import annotations

import threading
import uuid

import pytest

from agentckpt import Store
from agentckpt.errors import ConfigurationError, StoreError
from tests.clusters.cluster import PgCluster
from tests.clusters.pgbouncer import PgBouncer
from tests.scale.pgbouncer.conftest import bounced


def test_a_dropped_search_path_is_refused_before_anything_is_written(
    pg_cluster: PgCluster, pgbouncer: PgBouncer
) -> None:
    """PgBouncer drops libpq's options (search_path): the store would write to public."""
    name = f"bounce_bare_{uuid.uuid4().hex[:8]}"
    pg_cluster.sql(f'CREATE DATABASE "{name}"')
    try:
        with pytest.raises(ConfigurationError, match=r"ALTER ROLE postgres IN DATABASE"):
            Store.connect(bounced(pgbouncer, name))
        with pg_cluster.connect(dbname=name) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_class WHERE relname = 'runs'")
            assert tables.fetchone() == (0,)
    finally:
        pg_cluster.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_prepared_statements_through_pgbouncer_fail_loudly(url: str) -> None:
    """Without prepare_threshold=none, psycopg prepares a statement run 5 times on one
    server connection and runs it on another: an error, never a wrong answer."""
    errors: list[BaseException] = []
    with Store.connect(url.replace("&prepare_threshold=none", ""), pool_max=10) as store:
        run = store.create_run().run_id

        def read() -> None:
            try:
                for _ in range(50):
                    store.get_run(run)
            except StoreError as exc:
                errors.append(exc)

        # More client connections (10) than PgBouncer's server connections (5): clients
        # take turns on the server connections, and prepared statements go astray.
        threads = [threading.Thread(target=read) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors, "no prepared statement went astray: the test proved nothing"
    assert all("prepared statement" in str(e) for e in errors), errors


def test_concurrent_migrations_through_the_pooler_apply_each_once(
    pg_cluster: PgCluster, pgbouncer: PgBouncer
) -> None:
    """The migration lock is a transaction-level advisory lock: it holds through
    transaction pooling (a session lock would not)."""
    name = f"bounce_mig_{uuid.uuid4().hex[:8]}"
    pg_cluster.sql(f'CREATE DATABASE "{name}"')
    pg_cluster.sql(f"ALTER DATABASE \"{name}\" SET search_path = 'agentckpt'")
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            Store.connect(bounced(pgbouncer, name), pool_min=0).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=migrate) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        with pg_cluster.connect(dbname=name) as conn:
            rows = conn.execute(
                "SELECT version, count(*) FROM agentckpt.schema_migrations GROUP BY 1"
            ).fetchall()
        assert rows
        assert {count for _, count in rows} == {1}
    finally:
        pg_cluster.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
