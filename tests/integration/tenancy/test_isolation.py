"""Tenant A cannot read, list, fork, delete, overwrite or guess its way into tenant B's
runs, blobs, effects, events or history, even with B's run ids.

On PostgreSQL the stores connect as an application role without BYPASSRLS (conftest), so
what is proved is row-level security, not the store's politeness; on SQLite it is the
filter in every query. Raw SQL as the same roles checks what the API cannot show.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt.errors import (
    ConfigurationError,
    NotFoundError,
    RunNotFoundError,
    StepConflictError,
    TenantError,
)
from agentckpt.runs import queries as run_queries
from agentckpt.tenancy import TENANT_TABLES
from agentckpt.tenancy.tables import UNSCOPED_TABLES
from tests.integration.tenancy.conftest import Roles

BIG = "x" * 20_000  # past the blob threshold: stored as a blob of the run


@pytest.fixture(params=["sqlite", "postgres"])
def tenant_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated store URL whose stores are bound to their tenant (PG: the app role)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tenants.db'}"
        Store.connect(url).close()
        yield url
        return
    roles: Roles = request.getfixturevalue("roles")
    yield roles.app_url


def _populate(store: Store) -> tuple[uuid.UUID, dict[str, Any]]:
    """A run of the store's tenant with steps, a blob, an effect, an event, history."""
    run = store.create_run(agent_id="secret-agent", metadata={"owner": store.tenant})
    store.commit(run.run_id, {"messages": ["hello"], "doc": BIG})
    store.commit(run.run_id, {"messages": ["hello", "again"], "doc": BIG})
    ref = store.put_blob(run.run_id, b"tenant blob " * 1000)
    params = {"run_id": run.run_id, "step": 1, "key": "send-email", "codec": "raw"}
    store.backend.write(run_queries.INSERT_EFFECT, {**params, "payload": b"sent"})
    store.backend.write(
        run_queries.INSERT_EVENT,
        {
            "run_id": run.run_id,
            "event_id": uuid.uuid4(),
            "step": 1,
            "kind": "tool",
            "codec": "raw",
            "payload": b"event",
        },
    )
    return run.run_id, {"blob": ref, "effect": params}


def test_a_tenant_sees_nothing_of_another(tenant_url: str) -> None:
    with (
        Store.connect(tenant_url, tenant="tenant-b", migrate=False) as b,
        Store.connect(tenant_url, tenant="tenant-a", migrate=False) as a,
    ):
        b_run, b_refs = _populate(b)
        a_run, _ = _populate(a)
        before = b.latest(b_run)
        assert before is not None

        # read and list
        with pytest.raises(RunNotFoundError):
            a.get_run(b_run)
        with pytest.raises(RunNotFoundError):
            a.latest(b_run)
        with pytest.raises(RunNotFoundError):
            a.resume_run(b_run)
        with pytest.raises(NotFoundError):
            a.state_at(b_run, 1)
        with pytest.raises(RunNotFoundError):
            a.steps(b_run)
        assert [r.run_id for r in a.list_runs()] == [a_run]
        assert [r.run_id for r in b.list_runs()] == [b_run]
        with pytest.raises(NotFoundError):
            a.get_blob(b_run, b_refs["blob"])
        assert a.backend.read(run_queries.GET_EFFECT, b_refs["effect"]) == []
        assert a.backend.read(run_queries.LIST_EVENTS, {"run_id": b_run}) == []

        # fork, delete, overwrite, guess
        with pytest.raises(RunNotFoundError):
            a.fork(b_run)
        assert a.delete_run(b_run) is False
        with pytest.raises(RunNotFoundError):
            a.commit(b_run, {"messages": ["taken over"]})
        with pytest.raises(RunNotFoundError):
            a.commit(b_run, {"messages": ["taken over"]}, expected_head=2)
        with pytest.raises(StepConflictError):
            a.create_run(b_run)
        with pytest.raises(RunNotFoundError):
            a.create_run(b_run, exist_ok=True)
        with pytest.raises(RunNotFoundError):
            a.set_status(b_run, "failed", error="sabotage")
        assert a.prune(a_run) >= 0
        a.put_blob(b_run, b"planted by a")  # lands as a's row, never in b's run

        # b's run is whole and unchanged
        after = b.latest(b_run)
        assert after is not None
        assert (after.step, after.state) == (before.step, before.state)
        assert b.get_run(b_run).status == "active"
        assert b.get_run(b_run).tenant_id == "tenant-b"
        assert b.get_blob(b_run, b_refs["blob"]) == b"tenant blob " * 1000
        assert len(b.backend.read(run_queries.GET_EFFECT, b_refs["effect"])) == 1
        assert len(b.backend.read(run_queries.LIST_EVENTS, {"run_id": b_run})) == 1
        assert b.delete_run(b_run) is True


def test_a_store_without_tenant_is_the_default_tenant(tenant_url: str) -> None:
    with (
        Store.connect(tenant_url, migrate=False) as plain,
        Store.connect(tenant_url, tenant="default", migrate=False) as named,
        Store.connect(tenant_url, tenant="acme", migrate=False) as acme,
    ):
        assert plain.tenant == "default"
        run = plain.create_run()
        plain.commit(run.run_id, {"n": 1})
        assert plain.get_run(run.run_id).tenant_id == "default"
        assert named.latest(run.run_id) is not None
        assert acme.list_runs() == []


@pytest.mark.parametrize("bad", ["", " acme", "a'b", "a;b", "x" * 129, "ümlaut", "a b"])
def test_bad_tenant_names_are_refused_before_connecting(tmp_path: Path, bad: str) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    with pytest.raises(TenantError, match="not a valid name"):
        Store.connect(url, tenant=bad)
    with pytest.raises(ConfigurationError, match="tenant=7 must be a str"):
        Store.connect(url, tenant=7)
    assert not (tmp_path / "never.db").exists()


def test_a_tenant_in_the_url_counts_as_the_keyword(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    with Store.connect(f"{url}?tenant=acme") as store:
        run = store.create_run()
    with Store.connect(url, tenant="acme") as store:
        assert store.get_run(run.run_id).tenant_id == "acme"
    with sqlite3.connect(tmp_path / "t.db") as conn:
        assert conn.execute("SELECT tenant_id FROM runs").fetchall() == [("acme",)]


# -- PostgreSQL: what row-level security itself refuses -------------------------------


def _raw(roles: Roles, role: str, tenant: str | None) -> psycopg.Connection[Any]:
    conn = psycopg.connect(roles.dsn(role), options=f"-c search_path={roles.schema}")
    if tenant is not None:
        conn.execute("SELECT set_config('agentckpt.tenant', %s, true)", (tenant,))
    return conn


def _counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    counts = {}
    for table in TENANT_TABLES:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert row is not None
        counts[table] = row[0]
    return counts


def test_every_table_has_forced_row_level_security(roles: Roles) -> None:
    with psycopg.connect(roles.admin_dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
            "       (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid),"
            "       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid"
            "               AND a.attname = 'tenant_id' AND NOT a.attisdropped)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY 1",
            (roles.schema,),
        ).fetchall()
    scoped = {name for name, *_ in rows if name not in UNSCOPED_TABLES}
    assert scoped == set(TENANT_TABLES), "a table of the schema is not in TENANT_TABLES"
    for name, enabled, forced, policies, has_column in rows:
        if name in TENANT_TABLES:
            assert (enabled, forced, policies, has_column) == (True, True, 1, True), name


@pytest.mark.parametrize("role", ["app", "owner"])
def test_a_session_without_tenant_sees_and_writes_nothing(roles: Roles, role: str) -> None:
    with Store.connect(roles.app_url, tenant="tenant-b", migrate=False) as b:
        b_run, _ = _populate(b)
    name = roles.app if role == "app" else roles.owner
    with _raw(roles, name, None) as conn:
        assert set(_counts(conn).values()) == {0}
        conn.rollback()
        # '' is what PostgreSQL reports once a transaction that set the tenant ended.
        conn.execute("SELECT set_config('agentckpt.tenant', '', false)")
        assert set(_counts(conn).values()) == {0}
        updated = conn.execute("UPDATE runs SET status = 'failed'").rowcount
        deleted = conn.execute("DELETE FROM steps").rowcount
        assert (updated, deleted) == (0, 0)
        conn.commit()
    with _raw(roles, roles.app, "tenant-b") as conn:
        counts = _counts(conn)
        assert (counts["runs"], counts["steps"], counts["effects"], counts["events"]) == (
            1,
            2,
            1,
            1,
        )
        assert counts["blobs"] >= 1
        status = conn.execute("SELECT status FROM runs WHERE run_id = %s", (b_run,)).fetchone()
        assert status == ("active",)


def test_row_level_security_refuses_what_the_api_never_sends(roles: Roles) -> None:
    with Store.connect(roles.app_url, tenant="tenant-b", migrate=False) as b:
        b_run, _ = _populate(b)
    with _raw(roles, roles.app, "tenant-a") as conn:
        assert set(_counts(conn).values()) == {0}
        # Guessing the run id changes nothing of b's.
        assert (
            conn.execute("UPDATE runs SET status = 'x' WHERE run_id = %s", (b_run,)).rowcount == 0
        )
        assert conn.execute("DELETE FROM blobs WHERE run_id = %s", (b_run,)).rowcount == 0
        assert conn.execute("DELETE FROM runs WHERE run_id = %s", (b_run,)).rowcount == 0
        conn.commit()
        # Writing a row as b is refused by the policy's WITH CHECK.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO effects (run_id, step, key, codec, payload, tenant_id)"
                " VALUES (%s, 1, 'k', 'raw', 'x', 'tenant-b')",
                (b_run,),
            )
        conn.rollback()
        conn.execute("SELECT set_config('agentckpt.tenant', 'tenant-a', true)")
        # Moving one's own row into b's tenant is refused too.
        conn.execute(
            "INSERT INTO effects (run_id, step, key, codec, payload)"
            " VALUES (%s, 1, 'k', 'raw', 'x')",
            (b_run,),
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("UPDATE effects SET tenant_id = 'tenant-b'")
        conn.rollback()
    with Store.connect(roles.app_url, tenant="tenant-b", migrate=False) as b:
        checkpoint = b.latest(b_run)
        assert checkpoint is not None
        assert checkpoint.step == 2
        assert (
            len(b.backend.read(run_queries.GET_EFFECT, {"run_id": b_run, "step": 1, "key": "k"}))
            == 0
        )


def test_the_setting_ends_with_each_transaction(roles: Roles) -> None:
    """With prepare_threshold=none (PgBouncer's transaction mode, which hands a server
    connection to anyone) a pooled connection carries no tenant into the next
    transaction: the store sets it transaction-locally (test_session_tenant.py has the
    direct connection's case)."""
    url = f"{roles.app_url}&prepare_threshold=none"
    with Store.connect(url, tenant="tenant-b", migrate=False, pool_max=1) as b:
        _populate(b)

        def leftover(conn: psycopg.Connection[Any]) -> Any:
            sql = "SELECT current_setting('agentckpt.tenant', true) AS tenant"
            return conn.execute(sql).fetchone()

        with b.backend._pool.connection() as conn:  # type: ignore[attr-defined]
            assert leftover(conn) in ({"tenant": None}, {"tenant": ""})
            assert conn.execute("SELECT count(*) AS n FROM runs").fetchone() == {"n": 0}


def test_a_tenant_cannot_read_or_fork_into_another_tenants_history(tenant_url: str) -> None:
    from agentckpt import Conversations
    from agentckpt.conversation import queries as conversation_queries
    from agentckpt.conversation.options import ConversationOptions

    options = ConversationOptions(archive_threshold=2_000, archive_keep_turns=1)
    with (
        Store.connect(tenant_url, tenant="tenant-b", migrate=False) as b,
        Store.connect(tenant_url, tenant="tenant-a", migrate=False) as a,
    ):
        conv = Conversations(b, options=options).start(
            agent_id="b", agent_config={"model": "m"}, tools=[]
        )
        for turn in range(12):
            conv.add_user_message(f"turn {turn} " + "words " * 60)
            conv.add_assistant_message("ok " * 60)
        b_run = conv.conversation_id
        query = {"run_id": b_run, "segments": 1_000}
        archived = b.backend.read(conversation_queries.HISTORY, query)
        assert archived, "the conversation archived no turns"
        assert a.backend.read(conversation_queries.HISTORY, query) == []
        with pytest.raises(RunNotFoundError):
            Conversations(a).open(b_run, agent_config={"model": "m"}, tools=[])
        with pytest.raises(RunNotFoundError):
            a.fork(b_run)
        assert a.delete_run(b_run) is False
        assert len(b.backend.read(conversation_queries.HISTORY, query)) == len(archived)


def test_the_policy_helper_writes_what_the_migration_applied(roles: Roles) -> None:
    """tenant_policy_sql(table), for a table a later migration adds, gives it the same
    column, default, check and policy as migration 0010 gave the others."""
    from agentckpt.tenancy.policies import tenant_policy_sql

    with psycopg.connect(roles.admin_dsn, options=f"-c search_path={roles.schema}") as conn:
        conn.execute("CREATE TABLE extra (run_id uuid PRIMARY KEY)")
        conn.execute(tenant_policy_sql("extra").encode())

        def shape(table: str) -> tuple[Any, ...]:
            policy = conn.execute(
                "SELECT policyname, cmd, qual, with_check FROM pg_policies"
                " WHERE schemaname = %s AND tablename = %s",
                (roles.schema, table),
            ).fetchall()
            column = conn.execute(
                "SELECT data_type, is_nullable, column_default FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = %s AND column_name = 'tenant_id'",
                (roles.schema, table),
            ).fetchall()
            check = conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = %s::regclass AND contype = 'c' AND conname LIKE '%%tenant%%'",
                (f"{roles.schema}.{table}",),
            ).fetchall()
            return policy, column, check

        assert shape("extra") == shape("steps")
        conn.rollback()


async def test_an_async_store_is_bound_to_its_tenant_too(tenant_url: str) -> None:
    from agentckpt import AsyncStore

    async with (
        await AsyncStore.connect(tenant_url, tenant="tenant-b", migrate=False) as b,
        await AsyncStore.connect(tenant_url, tenant="tenant-a", migrate=False) as a,
    ):
        assert a.tenant == "tenant-a"
        run = await b.create_run()
        await b.commit(run.run_id, {"secret": "b's"})
        with pytest.raises(RunNotFoundError):
            await a.latest(run.run_id)
        assert await a.list_runs() == []
        assert await a.delete_run(run.run_id) is False
        checkpoint = await b.latest(run.run_id)
        assert checkpoint is not None
        assert checkpoint.state == {"secret": "b's"}
