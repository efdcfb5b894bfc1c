"""Group commit: concurrent commits of different runs share a transaction.

What must hold is what holds for lone commits: every acknowledged write is stored
exactly, a refused or failing write writes nothing and gets its own error, and the other
writes of its batch land. On PostgreSQL, that they did share transactions shows in the
rows' ``xmin``; on SQLite, in the batches the backend was handed.
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from typing import Any

import pytest

from agentckpt import AsyncStore, StaleHeadError, Store
from agentckpt._backends.factory import parse_url
from agentckpt._core.writes import Committed
from agentckpt.errors import ConfigurationError, OutcomeUnknownError, StoreError
from tests.support.dbsql import run_sql
from tests.support.writes import step_write


def state(run: int, step: int) -> dict[str, Any]:
    """A small state that differs per run and step."""
    return {"run": run, "step": step, "messages": [f"m{i}" for i in range(step)]}


def transactions(url: str, step: int) -> int:
    """How many transactions wrote the rows of ``step`` (every run's)."""
    rows = run_sql(url, "SELECT count(DISTINCT xmin::text) FROM steps WHERE step = ?", step)
    return int(rows[0][0])


async def _runs(store: AsyncStore, count: int) -> list[uuid.UUID]:
    runs = [(await store.create_run(agent_id=f"a{i}")).run_id for i in range(count)]
    for i, run in enumerate(runs):
        await store.commit(run, state(i, 1))  # heads cached: step 2 plans without a read
    return runs


def spy_batches(store: AsyncStore) -> list[int]:
    """Record the size of every batch the store's SQLite backend commits."""
    sizes: list[int] = []
    sync = store.backend.sync  # type: ignore[attr-defined]
    commit_batch = sync.commit_batch

    def recording(writes: Any) -> Any:
        sizes.append(len(writes))
        return commit_batch(writes)

    sync.commit_batch = recording
    return sizes


def shared_transactions(url: str, sizes: list[int], writes: int) -> bool:
    """Whether ``writes`` concurrent commits of step 2 took fewer transactions than writes."""
    if parse_url(url).dialect == "sqlite":
        return sum(sizes) == writes and len(sizes) < writes
    return transactions(url, 2) < writes


def test_concurrent_commits_share_transactions_and_all_land(url: str) -> None:
    async def main() -> None:
        async with await AsyncStore.connect(url) as store:
            sizes = spy_batches(store) if parse_url(url).dialect == "sqlite" else []
            runs = await _runs(store, 40)
            sizes.clear()
            infos = await asyncio.gather(
                *(store.commit(run, state(i, 2)) for i, run in enumerate(runs))
            )
            assert [info.step for info in infos] == [2] * 40
            for i, run in enumerate(runs):
                checkpoint = await store.latest(run)
                assert checkpoint is not None
                assert checkpoint.state == state(i, 2)
        assert shared_transactions(url, sizes, 40)

    asyncio.run(main())


def test_group_commit_1_sends_every_commit_alone(pg_url: str) -> None:
    async def main() -> None:
        async with await AsyncStore.connect(pg_url + "&group_commit=1") as store:
            runs = await _runs(store, 12)
            await asyncio.gather(*(store.commit(run, state(i, 2)) for i, run in enumerate(runs)))
        assert transactions(pg_url, 2) == 12

    asyncio.run(main())


def test_a_stale_write_is_refused_alone_in_its_batch(url: str) -> None:
    async def main() -> None:
        async with (
            await AsyncStore.connect(url) as mine,
            await AsyncStore.connect(url) as other,
        ):
            sizes = spy_batches(mine) if parse_url(url).dialect == "sqlite" else []
            runs = await _runs(mine, 10)
            sizes.clear()
            await other.commit(runs[3], {"written": "elsewhere"})  # moves run 3's head
            results = await asyncio.gather(
                *(mine.commit(run, state(i, 2)) for i, run in enumerate(runs)),
                return_exceptions=True,
            )
            assert isinstance(results[3], StaleHeadError)
            assert all(not isinstance(r, BaseException) for i, r in enumerate(results) if i != 3)
            stale = await mine.latest(runs[3])
            assert stale is not None
            assert stale.state == {"written": "elsewhere"}
            for i, run in enumerate(runs):
                if i != 3:
                    checkpoint = await mine.latest(run)
                    assert checkpoint is not None
                    assert checkpoint.state == state(i, 2)
        assert shared_transactions(url, sizes, 10)

    asyncio.run(main())


def test_a_write_the_database_refuses_fails_alone(url: str) -> None:
    async def main() -> None:
        async with await AsyncStore.connect(url) as store:
            runs = [(await store.create_run()).run_id for _ in range(6)]
            # "bogus" breaks the steps.kind CHECK constraint: the batch statement fails as
            # a whole, and each of its writes is sent again alone.
            writes = [
                step_write(run, payload=b'{"a":1}', kind="bogus" if i == 3 else "snapshot")
                for i, run in enumerate(runs)
            ]
            results = await asyncio.gather(
                *(store._group.commit(w) for w in writes), return_exceptions=True
            )
            assert isinstance(results[3], StoreError)
            assert "23514" in str(results[3]) or "CHECK constraint failed" in str(results[3])
            assert all(isinstance(r, Committed) for i, r in enumerate(results) if i != 3)
            for i, run in enumerate(runs):
                checkpoint = await store.latest(run)
                assert (checkpoint is None) == (i == 3)

    asyncio.run(main())


def test_backends_killed_under_batches_lose_no_acknowledged_commit(pg_url: str) -> None:
    """Connections die while batches are in flight; each commit lands, or says its
    outcome is unknown and lands when retried."""
    url = pg_url + "&application_name=gc_kill&wait=10"
    kill = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = 'gc_kill' AND pid <> pg_backend_pid()"
    )
    rng = random.Random(7)

    async def killer() -> None:
        await asyncio.sleep(rng.uniform(0, 0.004))
        await asyncio.to_thread(run_sql, url, kill)

    async def main() -> None:
        async with await AsyncStore.connect(url) as store:
            runs = await _runs(store, 30)
            for step in range(2, 8):
                results = await asyncio.gather(
                    killer(),
                    *(store.commit(run, state(i, step), step=step) for i, run in enumerate(runs)),
                    return_exceptions=True,
                )
                for i, (run, result) in enumerate(zip(runs, results[1:], strict=True)):
                    if isinstance(result, OutcomeUnknownError):
                        result = await store.commit(run, state(i, step), step=step)
                    assert not isinstance(result, BaseException), result
                    checkpoint = await store.latest(run)
                    assert checkpoint is not None
                    assert (checkpoint.step, checkpoint.state) == (step, state(i, step))

    asyncio.run(main())


def test_threads_sharing_a_sync_store_all_land(url: str) -> None:
    with Store.connect(url) as store:
        runs = [store.create_run().run_id for _ in range(12)]
        errors: list[BaseException] = []

        def worker(index: int) -> None:
            try:
                for step in range(1, 11):
                    store.commit(runs[index], state(index, step))
            except BaseException as exc:  # reported below, with the others
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors
        for i, run in enumerate(runs):
            checkpoint = store.latest(run)
            assert checkpoint is not None
            assert checkpoint.step == 10
            assert checkpoint.state == state(i, 10)


@pytest.mark.parametrize(
    "option", ["group_commit=0", "commit_senders=0", "group_commit=x", "pool_max=-1"]
)
def test_bad_group_commit_options_are_refused(option: str) -> None:
    with pytest.raises(ConfigurationError, match=option.split("=")[0]):
        parse_url(f"postgresql://localhost/db?{option}")
