"""Shared fixtures: a real SQLite file and a real PostgreSQL schema per test.

Every store test runs four ways: SQLite and PostgreSQL, sync and async. The async store
runs on its own event loop behind a small synchronous facade, so one test body drives
both APIs.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from agentckpt import Store
from tests.support import pg
from tests.support.facade import AsyncFacade

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


def _on_database(dsn: str, dbname: str) -> str:
    """``dsn`` (a URL) pointing at another database, without its query string."""
    parts = urlsplit(dsn.split("?")[0])
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, "", ""))


@pytest.fixture(scope="session")
def pg_template(pg_server_dsn: str) -> Iterator[str | None]:
    """A database migrated once per session, which each test's database copies.

    CREATE DATABASE ... TEMPLATE copies the migrated files (about 30 ms) instead of running
    every migration again (about 75 ms). None when the role may not create databases: the
    tests then get a fresh schema each, migrated by the store as it opens.
    """
    name = f"agentckpt_tmpl_{uuid.uuid4().hex[:8]}"
    admin = pg_server_dsn.split("?")[0]
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.errors.InsufficientPrivilege:
        yield None
        return
    try:
        Store.connect(f"{_on_database(pg_server_dsn, name)}?schema=agentckpt").close()
        yield name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_blank_url(pg_server_dsn: str) -> Iterator[str]:
    """A store URL on a fresh, empty PostgreSQL schema (never migrated), dropped after."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    base = pg_server_dsn.split("?")[0]
    yield f"{base}?schema={schema}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_url(
    request: pytest.FixtureRequest, pg_server_dsn: str, pg_template: str | None
) -> Iterator[str]:
    """A store URL on a fresh, migrated PostgreSQL database of its own, dropped after."""
    if pg_template is None:
        yield str(request.getfixturevalue("pg_blank_url"))
        return
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    yield f"{_on_database(pg_server_dsn, name)}?schema=agentckpt"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per session, which each test's file copies."""
    path = tmp_path_factory.mktemp("template") / "store.db"
    Store.connect(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def sqlite_blank_url(tmp_path: Path) -> str:
    """A store URL on a new SQLite file (never migrated)."""
    return f"sqlite:///{tmp_path}/store.db"


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A store URL on a fresh, migrated SQLite file."""
    shutil.copyfile(sqlite_template, tmp_path / "store.db")
    return f"sqlite:///{tmp_path}/store.db"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated store URL on each backend."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", "postgres"])
def blank_url(request: pytest.FixtureRequest) -> str:
    """A fresh store URL on each backend whose schema was never migrated."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_blank_url"))
    return str(request.getfixturevalue("pg_blank_url"))


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
