"""``AsyncAgentRun(overlap=True)``: step N+1 is computed while step N's commit is in flight.

Each test holds one of the guarantees of docs/runs.md ("Overlapped steps") on SQLite and
PostgreSQL, with a native async step function (one that never suspends, as a CPU-bound
step does, unless the test makes it), and would fail if the loop did not keep it. The
whole run-loop suite also runs overlapped (the ``overlap`` flavor of ``runs``).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agentckpt import AsyncStore, ConfigurationError, Store
from agentckpt._core.writes import CommitOutcome, Refused, StepWrite
from agentckpt.errors import LeaseLostError, StepAbandonedError, UnavailableError
from agentckpt.runs import AgentRun, AsyncAgentRun, AsyncAuditLog, AsyncStepContext
from tests.support.dbsql import run_sql


def expected(step: int) -> dict[str, Any]:
    """The state of the counter run at ``step`` (step 0: the initial state)."""
    return {"n": step, "seen": list(range(1, step + 1)), "pad": "x" * 200}


async def counter(ctx: AsyncStepContext) -> Any:
    ctx.state["n"] += 1
    ctx.state["seen"].append(ctx.step)
    return ctx.state


class Watched:
    """The store's real backend, its commit batches watched and, at will, failed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.in_flight = 0
        self.most_in_flight = 0
        self.outcomes: list[tuple[StepWrite, CommitOutcome]] = []
        self.threads: list[str] = []
        # Steps whose write fails once with UnavailableError (nothing written), after
        # a while: long enough for the loop to compute and send the next step.
        self.fail: set[int] = set()

    async def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        failing = [w for w in writes if w.step in self.fail]
        if failing:
            self.fail -= {w.step for w in failing}
            await asyncio.sleep(0.05)
            raise UnavailableError("injected: the database is unreachable (nothing written)")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            outcomes: list[CommitOutcome] = await self.inner.commit_batch(writes)
        finally:
            self.in_flight -= 1
        self.outcomes.extend(zip(writes, outcomes, strict=True))
        return outcomes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def no_sleep(delay: float) -> None:
    """The retry waits, not slept."""


async def collect(steps: Any, into: list[int]) -> None:
    """Iterate ``steps`` (a run's ``steps()``), noting each step yielded."""
    async for info in steps:
        into.append(info.step)


def run_async(fn: Callable[[AsyncStore], Any], url: str) -> Any:
    async def main() -> Any:
        async with await AsyncStore.connect(url) as store:
            return await fn(store)

    return asyncio.run(main())


def test_pipe19_steps_are_yielded_in_order_once_durable_while_the_next_one_runs(
    url: str,
) -> None:
    events: list[tuple[str, int]] = []
    checked: list[bool] = []

    async def step(ctx: AsyncStepContext) -> Any:
        events.append(("step", ctx.step))
        return await counter(ctx)

    async def main(store: AsyncStore) -> None:
        # No snapshot within the run: a snapshot prunes the steps before it, and the
        # one after a yielded step may have landed by the time it is read here.
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, snapshot_interval=100)
        with Store.connect(url) as check:
            async with run:
                async for info in run.steps(step, max_steps=30):
                    events.append(("yield", info.step))
                    # Durable when yielded: another connection reads it, exactly.
                    stored = check.state_at(run.run_id, info.step).state
                    checked.append(stored == expected(info.step))

    run_async(main, url)
    assert [n for kind, n in events if kind == "yield"] == list(range(31))
    assert all(checked)
    # Overlapped: step k+1 was called before step k was yielded (every k from 1 on;
    # the sequential loop calls it after).
    for k in range(1, 30):
        assert events.index(("step", k + 1)) < events.index(("yield", k))


def test_pipe19_at_most_one_step_is_computed_past_the_one_in_flight(url: str) -> None:
    heads: list[tuple[int, int]] = []

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)

        async def step(ctx: AsyncStepContext) -> Any:
            # The durable head while step k is computed: k-1 is in flight at most.
            heads.append((ctx.step, (await store.get_run(run.run_id)).head_step or 0))
            return await counter(ctx)

        result = await run.run(step, max_steps=40)
        return watched, result

    watched, result = run_async(main, url)
    assert result.state == expected(40)
    assert all(head >= k - 2 for k, head in heads), heads
    assert watched.most_in_flight == 1  # one write of the run at the database at a time


def test_pipe19_a_failed_commit_throws_away_the_step_computed_on_it(url: str) -> None:
    calls: list[int] = []

    async def step(ctx: AsyncStepContext) -> Any:
        calls.append(ctx.step)
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        watched.fail = {5}  # step 5's write fails, written nowhere
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, sleep=no_sleep)
        result = await run.run(step, max_steps=8)
        return watched, result

    watched, result = run_async(main, url)
    # Step 6 was computed on step 5 while 5 was in flight, and sent behind it; 5 failed,
    # so 6 was thrown away and both computed again.
    assert calls == [1, 2, 3, 4, 5, 6, 5, 6, 7, 8]
    # Its write reached the database after 5's had failed, and was refused there:
    # guarded by step 5, it could not land on step 4.
    refused = [w.step for w, outcome in watched.outcomes if isinstance(outcome, Refused)]
    assert refused == [6]
    assert result.state == expected(8)
    with Store.connect(url) as check:
        for number in range(9):
            assert check.state_at(result.run_id, number).state == expected(number)


def test_pipe19_an_effect_of_a_step_whose_parent_fails_never_runs_on_it(url: str) -> None:
    calls: list[int] = []
    acted: list[int] = []
    abandoned: list[int] = []

    async def step(ctx: AsyncStepContext) -> Any:
        calls.append(ctx.step)
        if ctx.step == 6:

            def act(key: str) -> int:
                acted.append(ctx.step)
                return ctx.step

            try:
                ctx.state["effect"] = await ctx.effect("act", act)
            except StepAbandonedError:
                abandoned.append(ctx.step)
                raise
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        watched.fail = {5}
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, sleep=no_sleep)
        return await run.run(step, max_steps=8)

    result = run_async(main, url)
    # ctx.effect waited for step 5's commit, which failed: it raised instead of acting;
    # computed again on the stored step 5, step 6 acted once.
    assert abandoned == [6]
    assert acted == [6]
    assert calls == [1, 2, 3, 4, 5, 6, 5, 6, 7, 8]
    assert result.state == {**expected(8), "effect": 6}


def test_pipe19_an_effect_waits_until_the_step_before_it_is_durable(url: str) -> None:
    seen: list[tuple[int, int]] = []

    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)
        with Store.connect(url) as check:

            async def step(ctx: AsyncStepContext) -> Any:
                def act(key: str) -> int:
                    # What another connection sees when the action runs.
                    seen.append((ctx.step, check.get_run(run.run_id).head_step or 0))
                    return ctx.step

                await ctx.effect("act", act)
                return await counter(ctx)

            return await run.run(step, max_steps=25)

    result = run_async(main, url)
    assert result.state == expected(25)
    assert [k for k, _ in seen] == list(range(1, 26))
    assert all(head >= k - 1 for k, head in seen), seen


def test_pipe19_a_step_that_raises_while_the_one_before_is_in_flight_settles_it_first(
    url: str,
) -> None:
    yielded: list[int] = []

    async def step(ctx: AsyncStepContext) -> Any:
        if ctx.step == 3:
            raise ValueError("bug in step 3")
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)
        with pytest.raises(ValueError, match="bug in step 3"):
            await collect(run.steps(step), yielded)
        return run.run_id

    run_id = run_async(main, url)
    assert yielded == [0, 1, 2]  # step 2, in flight when 3 raised, was yielded first
    with Store.connect(url) as check:
        info = check.get_run(run_id)
        assert (info.head_step, info.status) == (2, "failed")
        assert info.error is not None
        assert info.error.startswith("step 3: ValueError")


def test_pipe19_a_takeover_while_a_commit_is_in_flight_lands_nothing_after_it(url: str) -> None:
    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, heartbeat=False)

        async def step(ctx: AsyncStepContext) -> Any:
            if ctx.step == 5:
                # Step 4 is in flight; another worker takes the run over now.
                run_sql(
                    url,
                    "UPDATE runs SET lease_owner = 'new', lease_epoch = lease_epoch + 1 "
                    "WHERE run_id = ?",
                    str(ctx.run_id),
                )
            return await counter(ctx)

        yielded: list[int] = []
        with pytest.raises(LeaseLostError):
            await collect(run.steps(step), yielded)
        return run.run_id, yielded

    run_id, yielded = run_async(main, url)
    with Store.connect(url) as check:
        info = check.get_run(run_id)
        # Step 4 lands if it reached the database before the takeover, else it is
        # fenced; step 5 (built on it, under the old epoch) never lands.
        assert info.head_step in (3, 4)
        assert yielded == list(range(info.head_step + 1))
        assert info.status == "active"
        assert check.latest(run_id).state == expected(info.head_step)


def test_pipe19_sqlite_commits_overlapped_go_to_the_worker_thread(sqlite_url: str) -> None:
    threads: dict[bool, set[str]] = {}

    async def main(store: AsyncStore, overlap: bool) -> None:
        sync = store.backend.sync
        plain = sync.commit_batch
        names: set[str] = set()

        def commit_batch(writes: Sequence[StepWrite]) -> list[CommitOutcome]:
            names.add(threading.current_thread().name)
            return list(plain(writes))

        sync.commit_batch = commit_batch
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=overlap)
        await run.run(counter, max_steps=30)
        threads[overlap] = names

    for overlap in (False, True):

        async def one(store: AsyncStore, overlap: bool = overlap) -> None:
            await main(store, overlap)

        run_async(one, sqlite_url)
    # A lone run's commits run inline, on the event loop's thread; overlapped, on the
    # worker thread, so the loop computes the next step during the fsync.
    assert threading.main_thread().name in threads[False]
    assert threads[True] == {"agentckpt-sqlite"}


def test_pipe19_events_a_step_emits_while_its_parent_commits_follow_that_commit(
    url: str,
) -> None:
    async def step(ctx: AsyncStepContext) -> Any:
        ctx.emit("note", {"step": ctx.step})
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        async with await AsyncStore.connect(url) as audit_store:
            log = AsyncAuditLog(audit_store)
            log.start()
            run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, audit=log)
            await run.run(step, max_steps=10)
            await log.close()
            return [(e.kind, e.step) for e in await log.events(run.run_id)]

    events = run_async(main, url)
    steps = [(kind, n) for kind, n in events if kind in ("note", "step.committed")]
    assert len(steps) == 21  # steps 0 to 10 committed, notes of 1 to 10
    for k in range(2, 11):
        # Step k's note (emitted while k-1 was in flight) comes after k-1's commit.
        assert steps.index(("step.committed", k - 1)) < steps.index(("note", k))


def test_pipe19_the_threaded_loop_refuses_overlap(sqlite_url: str) -> None:
    with Store.connect(sqlite_url) as store:
        with pytest.raises(ConfigurationError, match="asyncio run loop"):
            AgentRun(store, uuid.uuid4(), overlap=True)
        with pytest.raises(ConfigurationError, match="True or False"):
            AgentRun(store, uuid.uuid4(), overlap="yes")  # type: ignore[arg-type]


def test_pipe19_closing_the_run_lets_the_commit_in_flight_settle_before_the_lease_goes(
    url: str,
) -> None:
    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)
        async with run:
            async for info in run.steps(counter):
                if info.step == 3:
                    break  # step 4 was sent before 3 was yielded
        # The iteration is still suspended (closed only when collected); close() let
        # step 4's commit settle before it released the lease.
        return run.run_id, run._flights

    run_id, flights = run_async(main, url)
    assert flights == set()
    with Store.connect(url) as check:
        info = check.get_run(run_id)
        assert (info.head_step, info.lease_owner) == (4, None)
        assert check.latest(run_id).state == expected(4)
