"""Shared fixtures: a real SQLite file and a real PostgreSQL schema per test.

Every store test runs four ways: SQLite and PostgreSQL, sync and async. The async store
runs on its own event loop behind a small synchronous facade, so one test body drives
both APIs.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentckpt import AsyncStore, Store
from tests.support import pg

pytest_plugins = ["tests.clusters.fixtures"]  # Citus, PgBouncer, replicas: tests/clusters
_PG: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    dsn, how = pg.find_server()
    _PG.update(dsn=dsn, how=how, proc=None)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if _PG["dsn"]:
        return [f"agentckpt: PostgreSQL tests use {_PG['how']}"]
    start = pg.can_start_cluster()
    if start is None:
        return ["agentckpt: PostgreSQL tests start a throwaway cluster (pytest-postgresql)"]
    verdict = "FAIL (CI=true)" if pg.in_ci() else "be SKIPPED"
    return [
        "!" * 78,
        f"agentckpt: NO POSTGRESQL: PostgreSQL tests will {verdict}.",
        f"  tried: {_PG['how']}; cannot start one: {start}.",
        f"  set {pg.ENV_DSN}=postgresql://user@host:port/db to use a server.",
        "!" * 78,
    ]


try:
    from pytest_postgresql import factories

    postgresql_proc = factories.postgresql_proc(port=None)
except ImportError:  # pragma: no cover - the plugin is a test dependency
    factories = None


@pytest.fixture(scope="session")
def pg_server_dsn(request: pytest.FixtureRequest) -> str:
    """A DSN of a PostgreSQL server that the tests may create schemas in."""
    if _PG["dsn"]:
        return str(_PG["dsn"])
    reason = pg.can_start_cluster()
    if reason is None and factories is not None:
        proc = request.getfixturevalue("postgresql_proc")
        return f"postgresql://{proc.user}@{proc.host}:{proc.port}/postgres"
    message = f"no PostgreSQL server: {_PG['how']}; cannot start one: {reason}"
    if pg.in_ci():
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def pg_url(pg_server_dsn: str) -> Iterator[str]:
    """A store URL on a fresh PostgreSQL schema, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    base = pg_server_dsn.split("?")[0]
    yield f"{base}?schema={schema}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A store URL on a fresh SQLite file."""
    return f"sqlite:///{tmp_path}/store.db"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh store URL on each backend."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


class AsyncFacade:
    """Drives an :class:`AsyncStore` through synchronous calls on a private loop."""

    def __init__(self, url: str, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.inner: AsyncStore = self.loop.run_until_complete(AsyncStore.connect(url, **options))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.loop.run_until_complete(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        self.loop.run_until_complete(self.inner.close())
        self.loop.close()


StoreFactory = Callable[..., Any]


@pytest.fixture(params=["sync", "async"])
def make_store(request: pytest.FixtureRequest, url: str) -> Iterator[StoreFactory]:
    """Open stores on this test's database (sync or async); all closed at teardown."""
    opened: list[Any] = []

    def make(**options: Any) -> Any:
        store: Any = (
            Store.connect(url, **options)
            if request.param == "sync"
            else AsyncFacade(url, **options)
        )
        opened.append(store)
        return store

    make.url = url  # type: ignore[attr-defined]
    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Any:
    """A store on a fresh database: SQLite or PostgreSQL, sync or async."""
    return make_store()
