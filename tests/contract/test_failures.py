"""Failures of the database and of the network, and schema migrations under concurrency.

Connection kills only ever target this test's own connections (found by a unique
``application_name``): other sessions on the same server are never touched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentckpt import (
    AsyncStore,
    MigrationError,
    OutcomeUnknownError,
    SnapshotPolicy,
    StepConflictError,
    Store,
    UnavailableError,
)
from agentckpt._backends.factory import parse_url
from agentckpt._backends.sql import load_migrations
from tests.support.acks import after_each_commit
from tests.support.dbsql import run_sql
from tests.support.facade import AsyncFacade

KEEP_ALL = SnapshotPolicy(interval=5, prune=False)
ROOT = Path(__file__).resolve().parents[2]
postgres_only = pytest.mark.parametrize("url", ["postgres"], indirect=True)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """Overrides conftest's ``url``: PostgreSQL connections carry a unique name."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    name = f"agentckpt_test_{uuid.uuid4().hex[:12]}"
    return f"{request.getfixturevalue('pg_url')}&application_name={name}"


def is_postgres(url: str) -> bool:
    return parse_url(url).dialect == "postgresql"


def migration_versions(url: str) -> list[int]:
    """The versions the shipped migrations of ``url``'s dialect bring a database to."""
    return [m.version for m in load_migrations("postgres" if is_postgres(url) else "sqlite")]


def state(n: int) -> dict[str, Any]:
    return {"messages": [f"m{i}" for i in range(1, n + 1)], "counter": {"n": n}}


def backend_of(store: Any) -> Any:
    return getattr(store, "inner", store).backend


# -- connecting ------------------------------------------------------------------------


def test_unreachable_server_is_unavailable() -> None:
    started = time.monotonic()
    with pytest.raises(UnavailableError, match="could not connect"):
        Store.connect("postgresql://127.0.0.1:1/x?connect_wait=1")
    assert time.monotonic() - started < 5


async def test_unreachable_server_is_unavailable_async() -> None:
    started = time.monotonic()
    with pytest.raises(UnavailableError, match="could not connect"):
        await AsyncStore.connect("postgresql://127.0.0.1:1/x?connect_wait=1")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("flavor", ["sync", "async"])
def test_unmigrated_schema(blank_url: str, flavor: str) -> None:
    url = blank_url
    store: Any = (
        Store.connect(url, migrate=False) if flavor == "sync" else AsyncFacade(url, migrate=False)
    )
    try:
        _check_unmigrated(store, url)
    finally:
        store.close()


def _check_unmigrated(store: Any, url: str) -> None:
    with pytest.raises(MigrationError, match="migrate"):
        store.create_run()
    with pytest.raises(MigrationError):
        store.list_runs()
    with pytest.raises(MigrationError):
        store.latest(uuid.uuid4())
    assert store.migrate() == migration_versions(url)
    run = store.create_run()
    assert store.commit(run.run_id, {"v": 1}).step == 1


# -- durability ------------------------------------------------------------------------


READER = """
import json, sys
from agentckpt import Store
with Store.connect(sys.argv[1], migrate=False) as store:
    latest = store.latest(sys.argv[2])
    print(json.dumps({"step": latest.step, "state": latest.state}))
"""


def test_a_returned_commit_is_visible_to_new_connections(make_store: Any, url: str) -> None:
    store = make_store()
    run = store.create_run()
    for n in range(1, 4):
        info = store.commit(run.run_id, state(n))
        # A brand-new connection, while the store still holds its own: the savepoint trap
        # (a commit that is really a savepoint in a never-committed transaction) shows here.
        rows = run_sql(
            url, "SELECT step FROM steps WHERE run_id = ? ORDER BY step", str(run.run_id)
        )
        assert rows[-1] == (info.step,)
    assert run_sql(url, "SELECT head_step FROM runs WHERE run_id = ?", str(run.run_id)) == [(3,)]
    if is_postgres(url):
        done = subprocess.run(
            [sys.executable, "-c", READER, url, str(run.run_id)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(done.stdout) == {"step": 3, "state": state(3)}


def _own_backends(url: str) -> list[int]:
    name = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))["application_name"]
    rows = run_sql(
        url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()",
        name,
    )
    return [pid for (pid,) in rows]


def _kill_own_backends(url: str) -> int:
    pids = _own_backends(url)
    assert pids, "the store should hold at least one connection"
    for pid in pids:
        assert run_sql(url, "SELECT pg_terminate_backend(?)", pid) == [(True,)]
    deadline = time.monotonic() + 10
    while set(pids) & set(_own_backends(url)):  # wait until they are really gone
        assert time.monotonic() < deadline, "terminated backends did not go away"
        time.sleep(0.01)
    return len(pids)


@postgres_only
@pytest.mark.postgres
def test_killed_connections_are_replaced(make_store: Any, url: str) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    for n in range(1, 4):
        store.commit(run.run_id, state(n))

    assert _kill_own_backends(url) >= 1
    assert store.commit(run.run_id, state(4)).step == 4  # the pool reconnects
    assert _kill_own_backends(url) >= 1
    assert store.latest(run.run_id).state == state(4)  # reads reconnect too
    assert _kill_own_backends(url) >= 1
    assert store.commit(run.run_id, state(5)).step == 5

    assert [i.step for i in store.steps(run.run_id)] == [1, 2, 3, 4, 5]
    for n in range(1, 6):
        assert store.state_at(run.run_id, n).state == state(n)
    assert run_sql(url, "SELECT count(*) FROM steps WHERE run_id = ?", str(run.run_id)) == [(5,)]


def _lose_first_ack(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the next backend commit really commit, then report a broken connection."""
    backend = backend_of(store)
    calls: list[int] = []

    def maybe_lose(writes: Any) -> None:
        calls.extend(write.step for write in writes)
        if len(calls) == 1:
            raise OutcomeUnknownError("simulated: the connection broke after COMMIT was sent")

    monkeypatch.setattr(backend, "commit_batch", after_each_commit(backend, maybe_lose))
    return calls


@pytest.mark.parametrize("keep", ["all", "pruning"])
def test_lost_acknowledgement_then_retry(
    make_store: Any, url: str, monkeypatch: pytest.MonkeyPatch, keep: str
) -> None:
    store = make_store(policy=KEEP_ALL if keep == "all" else SnapshotPolicy(interval=2))
    run = store.create_run()
    for n in range(1, 4):
        store.commit(run.run_id, state(n))

    calls = _lose_first_ack(store, monkeypatch)
    with pytest.raises(OutcomeUnknownError):
        store.commit(run.run_id, state(4), step=4)
    assert calls == [4]
    # It did land; the caller cannot know, so it retries the same commit.
    info = store.commit(run.run_id, state(4), step=4)
    assert info.step == 4
    assert info.write_version == 1
    rows = run_sql(
        url, "SELECT step, write_version FROM steps WHERE run_id = ? AND step = 4", str(run.run_id)
    )
    assert rows == [(4, 1)]
    with pytest.raises(StepConflictError):
        store.commit(run.run_id, state(99), step=4)
    assert store.latest(run.run_id).state == state(4)
    assert store.commit(run.run_id, state(5)).step == 5
    fresh = make_store()
    assert fresh.latest(run.run_id).state == state(5)


def test_lost_acknowledgement_retry_without_a_step_number(
    make_store: Any, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, state(1))
    _lose_first_ack(store, monkeypatch)
    with pytest.raises(OutcomeUnknownError):
        store.commit(run.run_id, state(2))
    # The retry names no step: it must be recognised as the commit that landed, not
    # written again as step 3.
    assert store.commit(run.run_id, state(2)).step == 2
    steps = run_sql(url, "SELECT step FROM steps WHERE run_id = ? ORDER BY step", str(run.run_id))
    assert steps == [(1,), (2,)]
    assert store.commit(run.run_id, state(3)).step == 3


def test_lost_acknowledgement_of_the_first_step(
    make_store: Any, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    run = store.create_run()
    _lose_first_ack(store, monkeypatch)
    with pytest.raises(OutcomeUnknownError):
        store.commit(run.run_id, state(1), step=1)
    assert store.commit(run.run_id, state(1), step=1).step == 1
    with pytest.raises(StepConflictError):
        store.commit(run.run_id, state(2), step=1)
    count = run_sql(url, "SELECT count(*) FROM steps WHERE run_id = ?", str(run.run_id))
    assert count == [(1,)]


# -- migrations ------------------------------------------------------------------------


def _migration_rows(url: str) -> list[tuple[Any, ...]]:
    return run_sql(url, "SELECT version, name, applied_at FROM schema_migrations ORDER BY version")


def test_concurrent_migrations(url: str) -> None:
    expected = migration_versions(url)
    workers = 4
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []
    stores: list[Store] = []
    lock = threading.Lock()

    def migrate() -> None:
        try:
            barrier.wait(timeout=30)
            store = Store.connect(url)
            with lock:
                stores.append(store)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=migrate) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        assert len(stores) == workers
        assert [r[0] for r in _migration_rows(url)] == expected  # each version once
        for store in stores:
            assert store.backend.applied_migrations() == expected
            assert store.migrate() == []
        run = stores[0].create_run()
        stores[1].commit(run.run_id, {"v": 1})
        assert stores[2].latest(run.run_id).state == {"v": 1}
    finally:
        for store in stores:
            store.close()


def test_connect_twice_is_a_no_op(make_store: Any, url: str) -> None:
    first = make_store()
    run = first.create_run()
    first.commit(run.run_id, {"v": 1})
    before = _migration_rows(url)
    assert [r[0] for r in before] == migration_versions(url)
    second = make_store()
    assert second.migrate() == []
    assert first.migrate() == []
    assert _migration_rows(url) == before
    assert second.latest(run.run_id).state == {"v": 1}
