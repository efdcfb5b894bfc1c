"""Pytest fixtures for real multi-node PostgreSQL setups (a pytest plugin).

Registered for the whole suite by ``pytest_plugins`` in ``tests/conftest.py``. Every test
using one of these fixtures gets the ``cluster`` marker automatically, so
``pytest -m cluster`` runs just them and ``-m "not cluster"`` skips them.

Session-scoped (shared; do not kill, freeze or reconfigure them):

- ``pg_cluster``: a plain :class:`~tests.clusters.cluster.PgCluster` (``fsync=off``).
- ``citus_cluster``: a :class:`~tests.clusters.citus.CitusCluster`, coordinator + 2 workers.
- ``pgbouncer``: a :class:`~tests.clusters.pgbouncer.PgBouncer` in transaction mode in
  front of ``pg_cluster``.

Function-scoped (each test gets its own, so it may break it):

- ``pg_sync_pair`` / ``pg_async_pair``: a :class:`~tests.clusters.replication.
  ReplicatedPair` (``fsync=on``), synchronous or asynchronous.
- ``pg_datadir_tmpfs`` / ``pg_waldir_tmpfs``: a :class:`~tests.clusters.fulldisk.
  TmpfsCluster` with its data directory / its ``pg_wal`` on a small tmpfs (root only).
- ``make_pg_cluster``: a factory ``make_pg_cluster(name, *, settings=None, durable=False,
  start=True)`` for clusters of your own.
- ``make_pgbouncer``: a factory ``make_pgbouncer(server=None, **options)`` (default
  server: ``pg_cluster``).

A fixture that cannot start what it provides *skips* the test with the reason, or, under
``CI=true``, *fails* it. Teardown always stops every process and removes every directory
and mount, whether the test passed or not; when a test failed, the tail of each server
log is added to its report and the full logs are kept (the summary says where).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest

from . import resources
from .binaries import citus_reason, find_binaries, find_pgbouncer, tmpfs_reason
from .citus import CitusCluster, start_citus
from .cluster import ClusterError, PgCluster
from .fulldisk import TmpfsCluster, datadir_on_tmpfs, waldir_on_tmpfs
from .pgbouncer import PgBouncer
from .processes import ProcessError
from .replication import ReplicatedPair, start_pair
from .tmpfs import TmpfsError

FIXTURES = frozenset(
    {
        "pg_cluster",
        "citus_cluster",
        "pgbouncer",
        "pg_sync_pair",
        "pg_async_pair",
        "pg_datadir_tmpfs",
        "pg_waldir_tmpfs",
        "make_pg_cluster",
        "make_pgbouncer",
    }
)
# What a fixture may raise when it cannot start; anything else is a bug, not a reason.
_START_ERRORS = (ClusterError, TmpfsError, ProcessError, OSError, psycopg.Error)

# (fixture, "start" or "stop", seconds), for the summary at the end of the run.
TIMINGS: list[tuple[str, str, float]] = []
KEPT_LOGS: list[Path] = []


def in_ci() -> bool:
    """True under ``CI=true`` (or 1/yes): missing infrastructure fails instead of skipping."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(what: str, reason: str) -> NoReturn:
    """Skip the test because ``what`` cannot run here, or fail it under CI."""
    message = f"{what}: {reason}"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class Factory:
    """A callable that makes resources for one test and cleans them all up after it."""

    def __init__(self, name: str, make: Callable[..., Any]) -> None:
        self.name = name
        self.made: list[Any] = []
        self._make = make

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            resource = self._make(*args, **kwargs)
        except _START_ERRORS as exc:
            unavailable(self.name, str(exc))
        TIMINGS.append((self.name, "start", time.monotonic() - started))
        self.made.append(resource)
        return resource

    def cleanup(self) -> None:
        """Clean up everything made, newest first."""
        for resource in reversed(self.made):
            _cleanup(self.name, resource)


def _cleanup(name: str, resource: Any) -> None:
    started = time.monotonic()
    resource.cleanup()
    TIMINGS.append((name, "stop", time.monotonic() - started))
    for part in _parts(resource):
        kept = getattr(part, "kept_logs", None)
        if kept is not None and kept not in KEPT_LOGS:
            KEPT_LOGS.append(kept)


def _parts(resource: Any) -> list[Any]:
    """The servers (clusters, bouncers) inside a fixture value."""
    if isinstance(resource, Factory):
        return [p for r in resource.made for p in _parts(r)]
    if isinstance(resource, ReplicatedPair):
        return [resource.primary, resource.standby]
    if isinstance(resource, CitusCluster):
        return list(resource.nodes)
    if isinstance(resource, PgCluster | PgBouncer):
        return [resource]
    return []


def _provide(name: str, start: Callable[[], Any]) -> Iterator[Any]:
    """Start a resource for a fixture, yield it, and always clean it up."""
    started = time.monotonic()
    try:
        resource = start()
    except _START_ERRORS as exc:
        unavailable(name, str(exc))
    TIMINGS.append((name, "start", time.monotonic() - started))
    try:
        yield resource
    finally:
        _cleanup(name, resource)


def _need_binaries(what: str) -> None:
    found = find_binaries()
    if isinstance(found, str):
        unavailable(what, found)


# ----------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A plain running PostgreSQL cluster shared by the session (``fsync=off``)."""
    _need_binaries("pg_cluster")
    yield from _provide("pg_cluster", lambda: PgCluster("session", durable=False).init().start())


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    """A Citus 13.2.2 coordinator with two workers, shared by the session."""
    _need_binaries("citus_cluster")
    yield from _provide("citus_cluster", start_citus)


@pytest.fixture(scope="session")
def pgbouncer(pg_cluster: PgCluster) -> Iterator[PgBouncer]:
    """PgBouncer (``pool_mode=transaction``, 5 server connections) in front of
    ``pg_cluster``, shared by the session; connect to its ``url``."""
    yield from _provide("pgbouncer", lambda: PgBouncer(pg_cluster.host, pg_cluster.port).start())


@pytest.fixture
def pg_sync_pair() -> Iterator[ReplicatedPair]:
    """A primary and a synchronous streaming standby, for this test only."""
    _need_binaries("pg_sync_pair")
    yield from _provide("pg_sync_pair", lambda: start_pair("sync", sync=True))


@pytest.fixture
def pg_async_pair() -> Iterator[ReplicatedPair]:
    """A primary and an asynchronous streaming standby, for this test only."""
    _need_binaries("pg_async_pair")
    yield from _provide("pg_async_pair", lambda: start_pair("async", sync=False))


@pytest.fixture
def pg_datadir_tmpfs() -> Iterator[TmpfsCluster]:
    """A running cluster whose data directory is on a 48 MiB tmpfs (``.tmpfs``); its WAL
    is on the normal disk, so a full data directory gives ERROR 53100, not a PANIC."""
    _need_binaries("pg_datadir_tmpfs")
    yield from _provide("pg_datadir_tmpfs", datadir_on_tmpfs)


@pytest.fixture
def pg_waldir_tmpfs() -> Iterator[TmpfsCluster]:
    """A running cluster whose ``pg_wal`` is on a 64 MiB tmpfs (``.tmpfs``)."""
    _need_binaries("pg_waldir_tmpfs")
    yield from _provide("pg_waldir_tmpfs", waldir_on_tmpfs)


def _make_cluster(
    name: str = "pg",
    *,
    settings: dict[str, Any] | None = None,
    durable: bool = False,
    start: bool = True,
    **options: Any,
) -> PgCluster:
    cluster = PgCluster(name, settings=settings, durable=durable, **options)
    try:
        cluster.init()
        if start:
            cluster.start()
    except BaseException:
        cluster.cleanup(keep_logs=True)
        raise
    return cluster


@pytest.fixture
def make_pg_cluster() -> Iterator[Factory]:
    """``make_pg_cluster(name="pg", *, settings=None, durable=False, start=True)``: new
    initialized (and started) clusters, all cleaned up after the test."""
    _need_binaries("make_pg_cluster")
    factory = Factory("make_pg_cluster", _make_cluster)
    try:
        yield factory
    finally:
        factory.cleanup()


@pytest.fixture
def make_pgbouncer(request: pytest.FixtureRequest) -> Iterator[Factory]:
    """``make_pgbouncer(server=None, *, pool_mode="transaction", pool_size=5, users=...)``:
    started PgBouncers in front of ``server`` (a PgCluster; default ``pg_cluster``)."""

    def make(server: PgCluster | None = None, **options: Any) -> PgBouncer:
        target = server or request.getfixturevalue("pg_cluster")
        bouncer = PgBouncer(target.host, target.port, **options)
        try:
            return bouncer.start()
        except BaseException:
            bouncer.cleanup(keep_logs=True)
            raise

    factory = Factory("make_pgbouncer", make)
    try:
        yield factory
    finally:
        factory.cleanup()


# ----------------------------------------------------------------------- hooks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a cluster fixture with ``cluster``."""
    for item in items:
        if FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remove directories and mounts that killed runs left behind."""
    found = find_binaries()
    if not isinstance(found, str):
        resources.reap_stale(found.tmp_root)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On failure: mark the servers the test used (their logs are kept at teardown) and
    add the tail of each server log to the report."""
    report: pytest.TestReport = yield
    if report.failed:
        funcargs: dict[str, Any] = getattr(item, "funcargs", {})
        for value in funcargs.values():
            for part in _parts(value):
                part.had_failure = True
                path = getattr(part, "log_path", None)
                if isinstance(path, Path) and path.is_file():
                    lines = path.read_text(errors="replace").splitlines()[-30:]
                    report.sections.append((f"{part.name} log, last 30 lines", "\n".join(lines)))
    return report  # type: ignore[return-value]


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line saying which cluster fixtures can run here, and why not."""
    found = find_binaries()
    if isinstance(found, str):
        return [f"agentckpt clusters: unavailable: {found}"]
    bouncer = find_pgbouncer()
    parts = [
        f"PostgreSQL {found.bindir} as {found.run_as.name}",
        f"citus: {citus_reason(found) or 'ok'}",
        f"pgbouncer: {bouncer}",
        f"tmpfs: {tmpfs_reason() or 'ok'}",
    ]
    return ["agentckpt clusters: " + "; ".join(parts)]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Start and stop times of each cluster fixture, and where failed runs' logs are."""
    if not TIMINGS and not KEPT_LOGS:
        return
    terminalreporter.section("cluster fixtures")
    by_name: dict[str, dict[str, list[float]]] = {}
    for name, phase, seconds in TIMINGS:
        by_name.setdefault(name, {}).setdefault(phase, []).append(seconds)
    for name, phases in by_name.items():
        cells = []
        for phase in ("start", "stop"):
            values = phases.get(phase, [])
            if values:
                mean = sum(values) / len(values)
                cells.append(
                    f"{phase} {mean:.2f} s" + (f" (x{len(values)})" if len(values) > 1 else "")
                )
        terminalreporter.write_line(f"{name:<18} " + ", ".join(cells))
    for path in KEPT_LOGS:
        terminalreporter.write_line(f"kept logs of a failed test: {path}")
