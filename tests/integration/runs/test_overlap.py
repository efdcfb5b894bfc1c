"""``AsyncAgentRun(overlap=True)``: the next steps are computed while the commits of the
ones before them are made durable, and written together.

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
from agentckpt._core.writes import CommitOutcome, Committed, StepWrite
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
        self.batches: list[list[int]] = []
        self.outcomes: list[tuple[StepWrite, CommitOutcome]] = []
        # Steps whose batch fails once with UnavailableError (nothing written), after a
        # while: long enough for the loop to compute the next steps on them; while
        # ``armed`` is False, such a batch is written as any other.
        self.fail: set[int] = set()
        self.armed = True
        # Seconds each batch takes before it is written (or failed).
        self.delay = 0.0

    async def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        if self.delay:
            await asyncio.sleep(self.delay)
        failing = [w for w in writes if w.step in self.fail] if self.armed else []
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
        self.batches.append([w.step for w in writes])
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


def increasing_runs(calls: list[int]) -> list[list[int]]:
    """``calls`` cut where a step number does not follow the one before (a retry)."""
    runs: list[list[int]] = [[]]
    for n in calls:
        if runs[-1] and n != runs[-1][-1] + 1:
            runs.append([])
        runs[-1].append(n)
    return runs


def test_steps_are_yielded_in_order_once_durable_while_later_ones_are_computed(
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
    # Overlapped: steps were computed before the ones before them were yielded (the
    # sequential loop computes step k+1 only after yielding k).
    ahead = [k for k in range(1, 30) if events.index(("step", k + 1)) < events.index(("yield", k))]
    assert len(ahead) >= 10, events


@pytest.mark.parametrize("window", [1, 3, 8])
def test_no_more_than_ahead_steps_are_computed_and_not_yet_durable(url: str, window: int) -> None:
    heads: list[tuple[int, int]] = []

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=window)

        async def step(ctx: AsyncStepContext) -> Any:
            # The durable head while step k is computed: steps head+1 to k are the
            # ones computed and not yet durable, k included.
            heads.append((ctx.step, (await store.get_run(run.run_id)).head_step or 0))
            return await counter(ctx)

        result = await run.run(step, max_steps=40)
        return watched, result

    watched, result = run_async(main, url)
    assert result.state == expected(40)
    assert all(k - head <= window for k, head in heads), heads
    assert watched.most_in_flight == 1  # one transaction of the run at a time
    assert all(len(batch) <= window for batch in watched.batches), watched.batches


def test_the_steps_computed_during_a_commit_are_written_together(url: str) -> None:
    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=4)
        result = await run.run(counter, max_steps=60)
        return watched, result

    watched, result = run_async(main, url)
    assert result.state == expected(60)
    # A step function that never suspends is computed faster than a commit is written:
    # batches carry several of the run's steps, each the next of the one before.
    assert max(len(batch) for batch in watched.batches) >= 2, watched.batches
    assert len(watched.batches) < 60
    for batch in watched.batches:
        assert batch == list(range(batch[0], batch[0] + len(batch)))
    assert all(isinstance(outcome, Committed) for _, outcome in watched.outcomes)
    with Store.connect(url) as check:
        for info in check.steps(result.run_id):
            assert check.state_at(result.run_id, info.step).state == expected(info.step)


def test_a_failed_commit_throws_away_the_steps_computed_on_it(url: str) -> None:
    calls: list[int] = []

    async def step(ctx: AsyncStepContext) -> Any:
        calls.append(ctx.step)
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        watched.fail = {5}  # the batch holding step 5 fails, written nowhere
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, sleep=no_sleep)
        result = await run.run(step, max_steps=12)
        return watched, result

    watched, result = run_async(main, url)
    first, again = increasing_runs(calls)
    # Steps were computed on step 5 while it was unwritten; its batch failed, so they
    # were thrown away and computed again from the last durable step (5 or before).
    assert first[0] == 1
    assert first[-1] >= 5
    assert again[0] <= 5
    assert again[-1] == 12
    # No step was written twice, none on a step that was not written.
    written = [w.step for w, outcome in watched.outcomes if isinstance(outcome, Committed)]
    assert written == list(range(13))
    assert result.state == expected(12)
    with Store.connect(url) as check:
        for info in check.steps(result.run_id):
            assert check.state_at(result.run_id, info.step).state == expected(info.step)


def test_an_effect_of_a_step_whose_parent_fails_never_runs_on_it(url: str) -> None:
    calls: list[int] = []
    acted: list[int] = []
    abandoned: list[int] = []

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        # Step 5's commit fails if it is still unwritten (held back or in flight) when
        # step 6 starts: each batch takes a while, so one is in flight then.
        watched.fail, watched.armed, watched.delay = {5}, False, 0.01

        async def step(ctx: AsyncStepContext) -> Any:
            calls.append(ctx.step)
            if ctx.step == 6:
                watched.armed = True

                def act(key: str) -> int:
                    acted.append(ctx.step)
                    return ctx.step

                try:
                    ctx.state["effect"] = await ctx.effect("act", act)
                except StepAbandonedError:
                    abandoned.append(ctx.step)
                    raise
            return await counter(ctx)

        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=8, sleep=no_sleep)
        return await run.run(step, max_steps=8)

    result = run_async(main, url)
    # ctx.effect waited for step 5's commit, which failed: it raised instead of acting;
    # computed again on the stored step 5, step 6 acted once.
    assert abandoned == [6]
    assert acted == [6]
    assert calls.count(6) == 2
    assert result.state == {**expected(8), "effect": 6}


def test_an_effect_waits_until_the_step_before_it_is_durable(url: str) -> None:
    seen: list[tuple[int, int]] = []

    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)
        with Store.connect(url) as check:

            async def step(ctx: AsyncStepContext) -> Any:
                if ctx.step % 3 == 0:

                    def act(key: str) -> int:
                        # What another connection sees when the action runs.
                        seen.append((ctx.step, check.get_run(run.run_id).head_step or 0))
                        return ctx.step

                    await ctx.effect("act", act)
                return await counter(ctx)

            return await run.run(step, max_steps=30)

    result = run_async(main, url)
    assert result.state == expected(30)
    assert [k for k, _ in seen] == list(range(3, 31, 3))
    # Its parent, held back or in flight when the step started, was durable first.
    assert all(head >= k - 1 for k, head in seen), seen


def test_a_step_that_raises_settles_the_steps_before_it_first(url: str) -> None:
    yielded: list[int] = []

    async def step(ctx: AsyncStepContext) -> Any:
        if ctx.step == 6:
            raise ValueError("bug in step 6")
        return await counter(ctx)

    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True)
        with pytest.raises(ValueError, match="bug in step 6"):
            await collect(run.steps(step), yielded)
        return run.run_id

    run_id = run_async(main, url)
    # The steps before it, in flight or held back when 6 raised, were written and
    # yielded first.
    assert yielded == [0, 1, 2, 3, 4, 5]
    with Store.connect(url) as check:
        info = check.get_run(run_id)
        assert (info.head_step, info.status) == (5, "failed")
        assert info.error is not None
        assert info.error.startswith("step 6: ValueError")


def test_a_takeover_lands_nothing_computed_after_it(url: str) -> None:
    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, heartbeat=False)

        async def step(ctx: AsyncStepContext) -> Any:
            if ctx.step == 9:
                # Steps before 9 are in flight or held back; another worker takes the
                # run over now.
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
        # The steps that reached the database before the takeover land, the rest are
        # fenced; step 9 and later (under the old epoch) never land.
        assert info.head_step is not None
        assert info.head_step <= 8
        assert yielded == list(range(info.head_step + 1))
        assert info.status == "active"
        assert check.latest(run_id).state == expected(info.head_step)


def test_a_step_slower_than_a_commit_is_not_held_back(url: str) -> None:
    heads: list[tuple[int, int]] = []

    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=4)

        async def step(ctx: AsyncStepContext) -> Any:
            await asyncio.sleep(0.02)  # a model call: far longer than a commit
            # The durable head as the step ends.
            heads.append((ctx.step, (await store.get_run(run.run_id)).head_step or 0))
            return await counter(ctx)

        return await run.run(step, max_steps=12)

    result = run_async(main, url)
    assert result.state == expected(12)
    # Each step's commit went while the next one was computed, not held back for it:
    # by the end of step k, step k-1 is durable.
    assert all(head == k - 1 for k, head in heads), heads


def test_sqlite_writes_a_chain_on_the_loops_thread(sqlite_url: str) -> None:
    async def main(store: AsyncStore) -> Any:
        sync = store.backend.sync
        plain = sync.commit_batch
        seen: list[tuple[str, int]] = []

        def commit_batch(writes: Sequence[StepWrite]) -> list[CommitOutcome]:
            seen.append((threading.current_thread().name, len(writes)))
            return list(plain(writes))

        sync.commit_batch = commit_batch
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=3)
        await run.run(counter, max_steps=30)
        return seen

    async def generous(store_url: str) -> Any:
        # Inline calls pause for a while when they get slow (a loaded machine's fsync):
        # a limit no call reaches keeps them on.
        async with await AsyncStore.connect(store_url, inline_limit=60.0) as store:
            return await main(store)

    seen = asyncio.run(generous(sqlite_url))
    # The loop waits for a chain it held back (it computes nothing meanwhile): written
    # inline, without a hand-off to the worker thread and back.
    chains = [name for name, size in seen if size > 1]
    assert chains
    assert set(chains) == {threading.main_thread().name}


def test_events_a_step_emits_while_its_parent_is_not_durable_follow_that_commit(
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
        # Step k's note (emitted while k-1 was not yet durable) comes after k-1's commit.
        assert steps.index(("step.committed", k - 1)) < steps.index(("note", k))


def test_the_threaded_loop_refuses_overlap_and_ahead_is_checked(sqlite_url: str) -> None:
    with Store.connect(sqlite_url) as store:
        with pytest.raises(ConfigurationError, match="asyncio run loop"):
            AgentRun(store, uuid.uuid4(), overlap=True)
        with pytest.raises(ConfigurationError, match="True or False"):
            AgentRun(store, uuid.uuid4(), overlap="yes")  # type: ignore[arg-type]

    async def main(store: AsyncStore) -> None:
        for bad in (0, -1, 2.5, "4", True):
            with pytest.raises(ConfigurationError, match="ahead must be"):
                AsyncAgentRun(store, overlap=True, ahead=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="overlap=True"):
            AsyncAgentRun(store, ahead=4)

    run_async(main, sqlite_url)


def test_closing_the_run_lets_the_commits_in_flight_settle_before_the_lease_goes(
    url: str,
) -> None:
    async def main(store: AsyncStore) -> Any:
        run = AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=4)
        async with run:
            async for info in run.steps(counter):
                if info.step == 3:
                    break  # later steps were computed, and some sent, before 3 yielded
        # The iteration is still suspended (closed only when collected); close() let
        # the commits in flight settle before it released the lease.
        return run.run_id, run._flights

    run_id, flights = run_async(main, url)
    assert flights == set()
    with Store.connect(url) as check:
        info = check.get_run(run_id)
        assert info.lease_owner is None
        assert info.head_step is not None
        assert 3 <= info.head_step <= 3 + 4
        assert check.latest(run_id).state == expected(info.head_step)


def test_several_overlapped_runs_of_one_store_share_transactions_and_stay_exact(
    url: str,
) -> None:
    """Four overlapped runs on one store: their chains meet in group commit's batches
    (one transaction, several runs' chains), and each run ends exactly as computed, with
    every kept step exact and nothing refused."""

    async def main(store: AsyncStore) -> Any:
        watched = Watched(store.backend)
        store.backend = watched
        runs = [
            AsyncAgentRun(store, initial_state=expected(0), overlap=True, ahead=4) for _ in range(4)
        ]
        results = await asyncio.gather(*(run.run(counter, max_steps=50) for run in runs))
        return watched, results

    watched, results = run_async(main, url)
    assert [r.state for r in results] == [expected(50)] * 4
    assert all(isinstance(outcome, Committed) for _, outcome in watched.outcomes)
    # Steps shared transactions: far fewer batches than steps.
    assert len(watched.batches) < 4 * 51 / 2
    with Store.connect(url) as check:
        for result in results:
            for info in check.steps(result.run_id):
                assert check.state_at(result.run_id, info.step).state == expected(info.step)
