"""An exhausted PostgreSQL pool (reliability row 23): a call that finds no free
connection waits at most ``wait`` seconds, then raises ``UnavailableError`` having
written nothing; once the connection is free again the same store goes on.

The pool's one connection is held by a read blocked behind another session's
``LOCK TABLE``; the commit that comes next has no connection to use.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentckpt import AsyncStore, Store, UnavailableError
from agentckpt._backends.factory import parse_url
from tests.support.dbsql import run_sql

POOL = "&pool_min=1&pool_max=1&commit_senders=1&wait=1"


@pytest.fixture
def locked(pg_url: str) -> Iterator[Any]:
    """A function that locks the store's ``runs`` table from another session until the
    returned connection is rolled back."""
    target = parse_url(pg_url)
    held: list[psycopg.Connection[Any]] = []

    def lock() -> psycopg.Connection[Any]:
        conn = psycopg.connect(target.location)
        conn.execute(f'LOCK TABLE "{target.settings["schema"]}".runs IN ACCESS EXCLUSIVE MODE')
        held.append(conn)
        return conn

    yield lock
    for conn in held:
        conn.close()


def test_a_commit_with_no_free_connection_is_unavailable_after_wait(
    pg_url: str, locked: Any
) -> None:
    with Store.connect(pg_url + POOL) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        holder = locked()
        read: list[Any] = []
        blocked = threading.Thread(target=lambda: read.append(store.latest(run.run_id)))
        blocked.start()
        time.sleep(0.3)  # the read has the pool's only connection, waiting on the lock
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="within 1 s") as raised:
            store.commit(run.run_id, {"n": 2})
        waited = time.monotonic() - started
        holder.rollback()
        blocked.join(timeout=30)
        assert 0.9 <= waited < 5, waited
        assert "no PostgreSQL connection free" in str(raised.value)
        assert read[0].step == 1
        assert run_sql(pg_url, "SELECT count(*) FROM steps") == [(1,)]  # nothing written
        assert store.commit(run.run_id, {"n": 2}).step == 2  # the same store goes on
        assert store.latest(run.run_id).state == {"n": 2}


def test_an_async_commit_with_no_free_connection_is_unavailable_after_wait(
    pg_url: str, locked: Any
) -> None:
    async def body() -> tuple[float, Any]:
        async with await AsyncStore.connect(pg_url + POOL) as store:
            run = await store.create_run()
            await store.commit(run.run_id, {"n": 1})
            holder = locked()
            read = asyncio.create_task(store.latest(run.run_id))
            await asyncio.sleep(0.3)
            started = time.monotonic()
            with pytest.raises(UnavailableError, match="within 1 s"):
                await store.commit(run.run_id, {"n": 2})
            waited = time.monotonic() - started
            holder.rollback()
            assert (await read).step == 1
            assert run_sql(pg_url, "SELECT count(*) FROM steps") == [(1,)]
            assert (await store.commit(run.run_id, {"n": 2})).step == 2
            return waited, (await store.latest(run.run_id)).state

    waited, state = asyncio.run(body())
    assert 0.9 <= waited < 5, waited
    assert state == {"n": 2}
