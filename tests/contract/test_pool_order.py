"""The PostgreSQL pool hands out the idle connection returned last.

psycopg_pool hands out the one idle longest, so one agent committing step after step
cycled through every pooled connection, each commit waking a server backend that had
slept since the pool last came round to it. agentckpt's pool takes the one returned last,
so a lone writer stays on one warm connection (docs/benchmarks.md, History). Checked on
the server: only one of the store's sessions ran a statement during the commits.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentckpt import SnapshotPolicy, Store
from tests.support.dbsql import run_sql
from tests.support.facade import AsyncFacade

POOL = 4


def busy_sessions(pg_url: str, tag: str, since: Any) -> tuple[int, int]:
    """The store's sessions (tagged by application_name), and how many of them started a
    statement at or after ``since`` (the server's clock)."""
    rows = run_sql(
        pg_url,
        "SELECT count(*), count(*) FILTER (WHERE query_start >= ?) "
        "FROM pg_stat_activity WHERE application_name = ?",
        since,
        tag,
    )
    return int(rows[0][0]), int(rows[0][1])


@pytest.mark.parametrize("flavor", ["sync", "async"])
def test_a_lone_writer_stays_on_one_connection(pg_url: str, flavor: str) -> None:
    tag = f"pool_order_{uuid.uuid4().hex[:10]}"
    url = f"{pg_url}&application_name={tag}"
    options: dict[str, Any] = {
        "policy": SnapshotPolicy(interval=5),
        "pool_min": POOL,
        "pool_max": POOL,
    }
    store: Any = Store.connect(url, **options) if flavor == "sync" else AsyncFacade(url, **options)
    try:
        run = store.create_run()
        store.commit(run.run_id, {"n": 0})
        since = run_sql(pg_url, "SELECT clock_timestamp()")[0][0]
        for n in range(1, 4 * POOL + 1):
            assert store.commit(run.run_id, {"n": n}).step == n + 1
            assert store.latest(run.run_id).state == {"n": n}
        sessions, busy = busy_sessions(pg_url, tag, since)
        # The pool holds its POOL connections; in psycopg_pool's order, all of them
        # would have run the 32 statements, a quarter each.
        assert sessions == POOL
        assert busy == 1
    finally:
        store.close()


def test_the_pool_hands_out_the_connection_returned_last(pg_url: str) -> None:
    store = Store.connect(pg_url, pool_min=3, pool_max=3)
    try:
        pool = store.backend._pool
        first, second, third = pool.getconn(), pool.getconn(), pool.getconn()
        for conn in (second, third, first):
            pool.putconn(conn)
        # Returned last, handed out first; then the one returned before it.
        assert pool.getconn() is first
        assert pool.getconn() is third
        assert pool.getconn() is second
        for conn in (first, second, third):
            pool.putconn(conn)
    finally:
        store.close()
