"""Reliability row 23, connections idle past a maximum: PostgreSQL closes a session idle
longer than ``idle_session_timeout`` (PostgreSQL 14+); the store's next call must not
show it.

Real server, real timeouts: the store's own sessions get ``idle_session_timeout=500ms``
through the URL's ``options``; each test checks in ``pg_stat_activity`` that the server
really closed them before the store is used again, then that the commit (or read)
succeeds without an error reaching the caller, and that nothing was written twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from agentckpt import AsyncStore, SnapshotPolicy, Store
from tests.support.dbsql import run_sql
from tests.support.facade import AsyncFacade

IDLE_MS = 500
KEEP_ALL = SnapshotPolicy(interval=5, prune=False)


def idle_url(pg_url: str, tag: str) -> str:
    """The store URL with a short idle_session_timeout and an application_name to find
    the store's sessions by."""
    options = quote(f"-c idle_session_timeout={IDLE_MS}")
    return f"{pg_url}&options={options}&application_name={tag}"


def sessions(pg_url: str, tag: str) -> int:
    rows = run_sql(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", tag)
    return int(rows[0][0])


def idle_until_closed(pg_url: str, tag: str) -> None:
    """Stay idle until the server has closed every session of the store (and at least
    twice the timeout); fail if it does not within 10 s."""
    time.sleep(2 * IDLE_MS / 1000)
    deadline = time.monotonic() + 10
    while sessions(pg_url, tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sessions(pg_url, tag) == 0, "the server kept the idle sessions open"


def stored_steps(pg_url: str, run_id: Any) -> list[tuple[Any, ...]]:
    return run_sql(
        pg_url,
        "SELECT step, write_version FROM steps WHERE run_id = ? ORDER BY step",
        str(run_id),
    )


@pytest.mark.parametrize("flavor", ["sync", "async"])
def test_commits_and_reads_after_the_server_closed_idle_sessions(pg_url: str, flavor: str) -> None:
    tag = f"reliab2_{uuid.uuid4().hex[:10]}"
    url = idle_url(pg_url, tag)
    options: dict[str, Any] = {"policy": KEEP_ALL, "pool_min": 2, "pool_max": 4}
    store: Any = Store.connect(url, **options) if flavor == "sync" else AsyncFacade(url, **options)
    try:
        assert sessions(pg_url, tag) >= 1
        run = store.create_run()
        assert store.commit(run.run_id, {"n": 1}).step == 1
        for n in range(2, 5):
            idle_until_closed(pg_url, tag)
            assert store.commit(run.run_id, {"n": n}).step == n
            idle_until_closed(pg_url, tag)
            latest = store.latest(run.run_id)
            assert (latest.step, latest.state) == (n, {"n": n})
        # Each step once, written once (a commit retried twice would be refused or
        # recognised; a rewrite would bump its write_version).
        # The pool did meet the connections the server closed (psycopg reports the
        # server's 57P05, sent before the statement, which therefore never ran).
        assert store.backend.pool_stats().get("returns_bad", 0) >= 3
        assert stored_steps(pg_url, run.run_id) == [(n, 1) for n in range(1, 5)]
        assert store.get_run(run.run_id).head_step == 4
    finally:
        store.close()


def test_concurrent_commits_after_the_server_closed_idle_sessions(pg_url: str) -> None:
    """The async store's group commit, several runs at once, every pooled connection
    closed by the server while idle."""
    tag = f"reliab2_{uuid.uuid4().hex[:10]}"
    url = idle_url(pg_url, tag)

    async def main() -> list[Any]:
        store = await AsyncStore.connect(url, policy=KEEP_ALL, pool_min=4, pool_max=4)
        try:
            runs = [await store.create_run() for _ in range(8)]
            await asyncio.gather(*(store.commit(r.run_id, {"n": 1}) for r in runs))
            for n in (2, 3):
                await asyncio.to_thread(idle_until_closed, pg_url, tag)
                infos = await asyncio.gather(*(store.commit(r.run_id, {"n": n}) for r in runs))
                assert [i.step for i in infos] == [n] * len(runs)
            assert store.backend.pool_stats().get("returns_bad", 0) >= 2
            return [r.run_id for r in runs]
        finally:
            await store.close()

    for run_id in asyncio.run(main()):
        assert stored_steps(pg_url, run_id) == [(1, 1), (2, 1), (3, 1)]
