"""The async SQLite store runs a lone run's calls on the event loop's own thread.

While one run commits alone the two thread hand-offs of each call buy nothing, so its
calls run on the loop's thread; while several runs commit they go to the SQLite thread,
so the loop computes the next steps meanwhile and group commit gathers them. A call run
inline never waits for another connection's write lock on the loop (it waits on the
thread, the loop free meanwhile), and slow inline calls send the next calls to the
thread. Which thread ran a statement is read from SQLite's own trace callback. The tests
of the inline path give it a generous ``inline_limit``: on a loaded machine the calls
can average more than the default's 5 ms, which sends them to the thread (tested too).
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
import time
from typing import Any

import pytest

from agentckpt import AsyncStore, ConfigurationError
from agentckpt._backends.factory import parse_url
from agentckpt._backends.sqlite_worker import AsyncSqliteBackend


class Threads:
    """The thread of every statement the store's connection runs, by SQL verb."""

    def __init__(self, store: AsyncStore) -> None:
        backend = store.backend
        assert isinstance(backend, AsyncSqliteBackend)
        self.seen: list[tuple[str, int]] = []
        backend.sync._conn.set_trace_callback(self._trace)

    def _trace(self, statement: str) -> None:
        self.seen.append((statement.split(None, 1)[0].upper(), threading.get_ident()))

    def of(self, verb: str) -> list[int]:
        """The threads that ran the statements starting with ``verb``, in order."""
        return [thread for seen, thread in self.seen if seen == verb]

    def clear(self) -> None:
        self.seen.clear()


async def _commits(store: AsyncStore, run: Any, states: range) -> None:
    for n in states:
        await store.commit(run, {"n": n, "text": "x" * 100})


GENEROUS = 10.0  # seconds: no call is that slow


async def test_a_lone_run_commits_on_the_loop_thread(sqlite_url: str) -> None:
    async with await AsyncStore.connect(sqlite_url, inline_limit=GENEROUS) as store:
        run = (await store.create_run(agent_id="a")).run_id
        threads = Threads(store)
        await _commits(store, run, range(2))  # the second is the first lone one
        threads.clear()
        await _commits(store, run, range(2, 12))
        loop = threading.get_ident()
        assert threads.of("COMMIT") == [loop] * 10
        checkpoint = await store.latest(run)
        assert checkpoint is not None
        assert checkpoint.step == 12
        assert checkpoint.state == {"n": 11, "text": "x" * 100}


async def test_a_lone_run_committing_in_a_loop_lets_other_tasks_run(sqlite_url: str) -> None:
    # An inline call does not suspend its caller by itself: without a yield, a run
    # committing in a loop held the loop until it was done, and the other runs of one
    # process got no step in (tests/crash/test_store.py's group writer found it).
    async with await AsyncStore.connect(sqlite_url, inline_limit=GENEROUS) as store:
        run = (await store.create_run(agent_id="a")).run_id
        other = (await store.create_run(agent_id="b")).run_id
        threads = Threads(store)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        await _commits(store, run, range(2))
        before = ticks
        await _commits(store, run, range(2, 42))
        during = ticks - before
        ticker.cancel()
        assert threads.of("COMMIT").count(threading.get_ident()) >= 40  # inline...
        assert during >= 40  # ...and the ticker ran beside each of them
        # Two runs committing in loops both get on.
        done: dict[Any, int] = {run: 0, other: 0}

        async def loop(target: Any) -> None:
            for n in range(30):
                await store.commit(target, {"n": n})
                done[target] += 1
                if done[run] == 30 or done[other] == 30:
                    return

        await asyncio.gather(loop(run), loop(other))
        assert min(done.values()) >= 15, done


async def test_runs_committing_together_use_the_sqlite_thread(sqlite_url: str) -> None:
    async with await AsyncStore.connect(sqlite_url, inline_limit=GENEROUS) as store:
        runs = [(await store.create_run(agent_id=f"a{i}")).run_id for i in range(2)]
        threads = Threads(store)
        # Alternating, never two commits of one run in a row: none is lone.
        for n in range(6):
            for run in runs:
                await store.commit(run, {"n": n})
        loop = threading.get_ident()
        commits = threads.of("COMMIT")
        assert len(commits) == 12
        assert loop not in commits
        # Concurrent, gathered by group commit: on the thread too.
        threads.clear()
        await asyncio.gather(*(_commits(store, run, range(6, 12)) for run in runs))
        assert threads.of("COMMIT")
        assert loop not in threads.of("COMMIT")
        for run in runs:
            checkpoint = await store.latest(run)
            assert checkpoint is not None
            assert checkpoint.state == {"n": 11, "text": "x" * 100}


async def test_reads_run_on_the_loop_thread_while_the_worker_is_idle(sqlite_url: str) -> None:
    async with await AsyncStore.connect(sqlite_url, inline_limit=GENEROUS) as store:
        runs = [(await store.create_run(agent_id=f"a{i}")).run_id for i in range(2)]
        for n in range(3):
            for run in runs:  # never lone
                await store.commit(run, {"n": n})
        threads = Threads(store)
        states = [await store.latest(run) for run in runs]
        assert [s.state if s else None for s in states] == [{"n": 2}, {"n": 2}]
        selects = threads.of("SELECT")
        assert selects
        assert set(selects) == {threading.get_ident()}


async def test_a_lone_commit_waits_for_another_writer_off_the_loop(sqlite_url: str) -> None:
    path = parse_url(sqlite_url).location
    async with await AsyncStore.connect(sqlite_url, inline_limit=GENEROUS) as store:
        run = (await store.create_run(agent_id="a")).run_id
        await _commits(store, run, range(3))  # lone by now
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's write, holding the lock
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, other.execute, "COMMIT")
        ticks: list[float] = []

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        started = time.monotonic()
        info = await store.commit(run, {"n": 3})
        waited = time.monotonic() - started
        ticker.cancel()
        other.close()
        assert info.step == 4
        assert waited >= 0.25  # it did wait for the lock...
        # ...and the loop ran meanwhile: ticks all along the wait, none far apart.
        during = [t for t in ticks if started <= t <= started + waited]
        assert len(during) >= 10
        assert max(b - a for a, b in itertools.pairwise(during)) < 0.2
        checkpoint = await store.latest(run)
        assert checkpoint is not None
        assert checkpoint.state == {"n": 3}
        # The lock released, the lone run's commits are inline again.
        threads = Threads(store)
        await _commits(store, run, range(4, 6))
        assert threads.of("COMMIT") == [threading.get_ident()] * 2


@pytest.mark.parametrize("limit", [GENEROUS, 1e-9])
async def test_slow_inline_calls_send_the_next_ones_to_the_thread(
    sqlite_url: str, limit: float
) -> None:
    # With a limit no call meets, the first inline call (a read as the store opens) is
    # over it: every call after it goes to the thread (for ten seconds, longer than the
    # test). The same calls with a generous limit run on the loop's thread.
    async with await AsyncStore.connect(sqlite_url, inline_limit=limit) as store:
        threads = Threads(store)
        run = (await store.create_run(agent_id="a")).run_id
        await _commits(store, run, range(8))
        await store.latest(run)
        assert len(threads.of("COMMIT")) == 9  # the run's creation and 8 steps
        on_loop = [verb for verb, thread in threads.seen if thread == threading.get_ident()]
        if limit == GENEROUS:
            assert on_loop.count("COMMIT") == 7  # all but the creation and the first step
            assert "SELECT" in on_loop
        else:
            assert on_loop == []


async def test_inline_limit_zero_keeps_every_call_on_the_thread(sqlite_url: str) -> None:
    async with await AsyncStore.connect(sqlite_url + "?inline_limit=0") as store:
        run = (await store.create_run(agent_id="a")).run_id
        threads = Threads(store)
        await _commits(store, run, range(6))
        await store.latest(run)
        assert threads.seen
        assert threading.get_ident() not in {t for _, t in threads.seen}


@pytest.mark.parametrize("value", ["-1", "soon"])
async def test_a_bad_inline_limit_is_refused(sqlite_url: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match="inline_limit"):
        await AsyncStore.connect(f"{sqlite_url}?inline_limit={value}")
