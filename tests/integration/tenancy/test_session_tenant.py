"""A direct connection carries its store's tenant for its whole session, and a store never
relies on a session that carries another tenant.

The store's pool sends ``-c agentckpt.tenant=<tenant>`` (and a nonce of the pool) in the
connection's startup options, so a statement needs no ``set_config`` first. What must
hold: a connection last used by tenant B, handed to a store of tenant A, still reads and
writes only A's rows (A then sets its tenant in each transaction, as behind PgBouncer);
RESET ALL and DISCARD ALL return to the startup value, never to no tenant or another
one; a migration still sees no tenant's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt._backends import postgres
from agentckpt._backends.postgres import PostgresBackend
from agentckpt._backends.sql import Migration, load_migrations
from agentckpt.errors import RunNotFoundError
from agentckpt.runs import queries as run_queries
from tests.integration.tenancy.conftest import Roles

pytestmark = pytest.mark.postgres


def setting(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute("SELECT current_setting('agentckpt.tenant', true) AS t").fetchone()
    return row["t"] if row else None


@pytest.fixture
def b_store(roles: Roles) -> Iterator[Store]:
    """Tenant B's store on ONE pooled connection, with a run of B on it."""
    with Store.connect(roles.app_url, tenant="tenant-b", migrate=False, pool_max=1) as b:
        run = b.create_run(agent_id="b-agent")
        for n in range(7):  # commit_step is prepared on the connection by now
            b.commit(run.run_id, {"who": "b", "n": n})
        yield b


def over_the_pool_of(b: Store, tenant: str) -> Store:
    """A store of ``tenant`` on B's pool: its one connection was last used by B (and its
    session carries B's tenant)."""
    backend: Any = b.backend
    return Store(PostgresBackend(backend._pool, schema=backend.schema, tenant=tenant))


def a_sees_only_its_own(a: Store, b: Store, roles: Roles) -> None:
    b_runs = {r.run_id for r in b.list_runs(limit=100)}
    assert b_runs
    assert {r.run_id for r in a.list_runs(limit=100)}.isdisjoint(b_runs)
    for run_id in b_runs:
        with pytest.raises(RunNotFoundError):
            a.latest(run_id)
    run = a.create_run(agent_id="a-agent")
    a.commit(run.run_id, {"who": "a"})
    a.commit(run.run_id, {"who": "a", "n": 2})
    a.backend.write(
        run_queries.INSERT_EFFECT,
        {"run_id": run.run_id, "step": 1, "key": "k", "codec": "raw", "payload": b"a"},
    )
    a.backend.write_many(
        run_queries.INSERT_EFFECT,
        [{"run_id": run.run_id, "step": 2, "key": "k", "codec": "raw", "payload": b"a"}],
    )
    checkpoint = a.latest(run.run_id)
    assert checkpoint is not None
    assert checkpoint.state == {"who": "a", "n": 2}
    # B's store, on the same connection, sees none of it.
    with pytest.raises(RunNotFoundError):
        b.latest(run.run_id)
    assert run.run_id not in {r.run_id for r in b.list_runs(limit=100)}
    # What was stored, as the superuser sees it: every row of A's run is A's.
    with psycopg.connect(roles.admin_dsn) as conn:
        conn.execute(f"SET search_path = {roles.schema}")
        for table in ("runs", "steps", "effects"):
            tenants = conn.execute(
                f"SELECT DISTINCT tenant_id FROM {table} WHERE run_id = %s", (run.run_id,)
            ).fetchall()
            assert tenants == [("tenant-a",)], table
        b_tenants = conn.execute(
            "SELECT DISTINCT tenant_id FROM runs WHERE run_id = ANY(%s)", (list(b_runs),)
        ).fetchall()
        assert b_tenants == [("tenant-b",)]


def test_a_direct_connection_carries_its_stores_tenant_through_resets(
    b_store: Store,
) -> None:
    backend: Any = b_store.backend
    with backend._pool.connection() as conn:
        assert setting(conn) == "tenant-b"
        assert postgres._SESSION_TENANT.get(conn) == "tenant-b"
        # A transaction-local value ends with its transaction, back to the session's.
        with conn.transaction():
            conn.execute("SELECT set_config('agentckpt.tenant', 'tenant-x', true)")
            assert setting(conn) == "tenant-x"
        assert setting(conn) == "tenant-b"
        for reset in ("RESET ALL", "RESET agentckpt.tenant", "DISCARD ALL"):
            conn.execute(reset)
            assert setting(conn) == "tenant-b", reset
    # The store works on after the resets (DISCARD ALL dropped the prepared statements).
    run = b_store.create_run()
    for n in range(8):
        b_store.commit(run.run_id, {"n": n})
    assert {r.agent_id for r in b_store.list_runs(limit=100)} == {"b-agent", ""}


def test_a_store_on_a_connection_last_used_by_another_tenant(b_store: Store, roles: Roles) -> None:
    a = over_the_pool_of(b_store, "tenant-a")
    backend: Any = b_store.backend
    with backend._pool.connection() as conn:
        # The connection carries B: A must not trust it, and sets its own tenant.
        assert postgres._SESSION_TENANT.get(conn) == "tenant-b"
    a_sees_only_its_own(a, b_store, roles)


def test_the_same_after_a_connection_reset(b_store: Store, roles: Roles) -> None:
    backend: Any = b_store.backend
    with backend._pool.connection() as conn:
        conn.execute("DISCARD ALL")
    a_sees_only_its_own(over_the_pool_of(b_store, "tenant-a"), b_store, roles)


def test_a_connection_reopened_by_the_pool_is_checked_again(b_store: Store, roles: Roles) -> None:
    backend: Any = b_store.backend
    with backend._pool.connection() as conn:
        conn.close()  # the pool replaces it
    run = b_store.create_run(agent_id="b-agent")
    b_store.commit(run.run_id, {"who": "b"})
    with backend._pool.connection() as conn:
        assert postgres._SESSION_TENANT.get(conn) == "tenant-b"
    a_sees_only_its_own(over_the_pool_of(b_store, "tenant-a"), b_store, roles)


def test_no_session_tenant_without_the_pools_nonce(b_store: Store) -> None:
    """A session that reports the tenant but not this pool's nonce (a server connection a
    pooler lends, which someone left with a session value) is not trusted."""
    backend: Any = b_store.backend
    with backend._pool.connection() as conn:
        assert postgres.bind_session(conn, "tenant-b", "not-the-nonce") is False
        assert postgres._SESSION_TENANT.get(conn) is None
        conn.close()


def test_prepare_threshold_none_sends_no_session_tenant(roles: Roles) -> None:
    url = f"{roles.app_url}&prepare_threshold=none"
    with Store.connect(url, tenant="tenant-b", migrate=False, pool_max=1) as b:
        backend: Any = b.backend
        with backend._pool.connection() as conn:
            assert setting(conn) in (None, "")
            assert postgres._SESSION_TENANT.get(conn) is None
        run = b.create_run()
        b.commit(run.run_id, {"n": 1})
        assert b.latest(run.run_id) is not None


def test_a_migration_sees_no_tenants_rows(
    roles: Roles, b_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrating through a store of tenant B, whose session carries B, a migration still
    reads no row (migration 0010): a data migration must run as a role that bypasses
    row-level security, never over one tenant's rows only."""
    probe = Migration(
        len(load_migrations("postgres")) + 1,
        f"probe_{uuid.uuid4().hex[:6]}",
        "CREATE TABLE seen_by_migration AS SELECT count(*) AS n FROM runs;",
    )
    migrations = (*load_migrations("postgres"), probe)
    monkeypatch.setattr(postgres, "load_migrations", lambda dialect: migrations)
    with Store.connect(roles.owner_url, tenant="tenant-b", migrate=False, pool_max=1) as owner:
        assert owner.backend.migrate() == [probe.version]
        backend: Any = owner.backend
        with backend._pool.connection() as conn:
            assert conn.execute("SELECT n FROM seen_by_migration").fetchone() == {"n": 0}
            assert conn.execute("SELECT count(*) AS n FROM runs").fetchone() == {"n": 1}
