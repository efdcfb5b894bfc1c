"""The run loop on SQLite and PostgreSQL, sync and async: steps, resume, errors, effects."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from agentckpt import AsyncStore, OutcomeUnknownError, SnapshotPolicy
from agentckpt.runs import (
    AsyncAgentRun,
    FatalError,
    Finish,
    LeaseHeldError,
    LeaseLostError,
    RetriesExhaustedError,
    RetryPolicy,
    RunFailedError,
    TransientError,
    idempotency_key,
)
from tests.integration.runs.conftest import Runs
from tests.support.runs import PROMPT, core, counter_state, counter_step

NO_JITTER = RetryPolicy(max_attempts=4, initial_delay=0.5, multiplier=2.0, jitter=0.0)


def test_a_new_run_commits_its_initial_state_then_one_step_per_iteration(runs: Runs) -> None:
    run = runs.agent_run(initial_state=counter_state())
    result = run.run(counter_step, max_steps=5)

    assert (result.status, result.step) == ("completed", 5)
    assert core(result.state) == {"n": 5, "seen": [1, 2, 3, 4, 5]}
    kept = runs.check.steps(run.run_id)
    assert [(s.step, s.parent_step) for s in kept] == [
        (0, None),
        (1, 0),
        (2, 1),
        (3, 2),
        (4, 3),
        (5, 4),
    ]
    assert runs.check.latest(run.run_id).state == result.state
    info = runs.check.get_run(run.run_id)
    assert (info.status, info.error, info.lease_owner) == ("completed", None, None)


def test_a_run_resumes_after_its_last_committed_step(runs: Runs) -> None:
    run_id = uuid.uuid4()
    first = runs.agent_run(run_id, initial_state=counter_state())
    with first:
        for info in first.steps(counter_step):
            if info.step == 3:
                break

    calls: list[int] = []

    def step(ctx: Any) -> Any:
        calls.append(ctx.step)
        return counter_step(ctx)

    head = runs.check.get_run(run_id).head_step
    assert head is not None
    assert head == 3 or (runs.overlap and 3 < head <= 3 + runs.ahead)
    # The resumed run ignores initial_state: the database has the run.
    second = runs.agent_run(run_id, initial_state={"ignored": True})
    result = second.run(step, max_steps=6)

    # Overlapped, later steps were computed (and some sent) before step 3 was yielded,
    # and the loop let the commits in flight settle when the iteration stopped: the
    # resumed run goes on after the last one that landed.
    assert calls == list(range(head + 1, 7))
    last = max(head, 6)
    assert core(result.state) == {"n": last, "seen": list(range(1, last + 1))}


def test_a_completed_run_does_not_step_again(runs: Runs) -> None:
    run_id = uuid.uuid4()
    runs.agent_run(run_id, initial_state=counter_state()).run(counter_step, max_steps=2)

    def boom(ctx: Any) -> Any:
        raise AssertionError("a completed run must not step")

    result = runs.agent_run(run_id).run(boom, max_steps=10)
    assert (result.status, result.step, result.state["n"]) == ("completed", 2, 2)


def test_finish_commits_the_last_state_and_completes_the_run(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        ctx.state["n"] += 1
        return Finish(ctx.state) if ctx.state["n"] == 3 else ctx.state

    result = runs.agent_run(initial_state={"n": 0}).run(step)
    assert (result.status, result.step, result.state) == ("completed", 3, {"n": 3})
    assert runs.check.get_run(result.run_id).status == "completed"


def test_snapshot_interval_sets_the_snapshot_cadence_and_prunes(runs: Runs) -> None:
    run = runs.agent_run(initial_state=counter_state(), snapshot_interval=4)
    run.run(counter_step, max_steps=10)
    kept = runs.check.steps(run.run_id)
    # Snapshots at 0, 4, 8; each prunes the steps before it.
    assert [(s.step, s.kind) for s in kept] == [(8, "snapshot"), (9, "delta"), (10, "delta")]


def test_a_new_run_without_initial_state_is_a_configuration_error(runs: Runs) -> None:
    from agentckpt import ConfigurationError

    with pytest.raises(ConfigurationError, match="initial_state"):
        runs.agent_run().run(counter_step, max_steps=1)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_max_steps_is_a_configuration_error_and_nothing_runs(runs: Runs, bad: Any) -> None:
    from agentckpt import ConfigurationError, RunNotFoundError

    run = runs.agent_run(initial_state=counter_state())
    with pytest.raises(ConfigurationError, match=rf"max_steps must be .*, got {bad!r}"):
        run.run(counter_step, max_steps=bad)
    with pytest.raises(RunNotFoundError):  # refused before the run was created
        runs.check.steps(run.run_id)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"snapshot_interval": 0}, "snapshot_interval must be an integer >= 1, got 0"),
        ({"snapshot_interval": True}, "snapshot_interval must be an integer >= 1, got True"),
        ({"redactors": 5}, "redactors must be a list of redactors, not int"),
    ],
)
def test_bad_run_settings_are_a_configuration_error_naming_them(
    runs: Runs, settings: dict[str, Any], message: str
) -> None:
    from agentckpt import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        runs.agent_run(initial_state=counter_state(), **settings)


# -- errors ---------------------------------------------------------------------------


def test_transient_error_retries_from_the_reloaded_checkpoint_with_backoff(runs: Runs) -> None:
    slept: list[float] = []
    attempts: list[tuple[int, int, int]] = []

    def step(ctx: Any) -> Any:
        attempts.append((ctx.step, ctx.attempt, ctx.state["n"]))
        ctx.state["n"] += 1
        if ctx.step == 2 and ctx.attempt < 3:
            ctx.state["poisoned"] = True  # must not survive into the retry
            raise TransientError("rate limited")
        return ctx.state

    run = runs.agent_run(initial_state={"n": 0}, retry=NO_JITTER, sleep=runs.sleeper(slept))
    result = run.run(step, max_steps=3)

    assert attempts == [(1, 1, 0), (2, 1, 1), (2, 2, 1), (2, 3, 1), (3, 1, 2)]
    assert slept == [0.5, 1.0]
    assert result.state == {"n": 3}


class LostAck:
    """A real backend whose commit of one step lands but reports a lost connection."""

    def __init__(self, inner: Any, flavor: str, step: int) -> None:
        self.inner = inner
        self.step = step
        self.dialect = inner.dialect
        if flavor == "async":

            async def commit_batch(writes: Any) -> Any:
                outcomes = await inner.commit_batch(writes)
                return self._after(writes, outcomes)

            self.commit_batch = commit_batch
        else:
            self.commit_batch = lambda writes: self._after(writes, inner.commit_batch(writes))

    def _after(self, writes: Any, outcomes: Any) -> Any:
        if any(write.step == self.step for write in writes):
            self.step = -1
            raise OutcomeUnknownError("connection lost during COMMIT (injected)")
        return outcomes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_commit_of_unknown_outcome_is_resolved_by_reloading_from_the_database(
    runs: Runs,
) -> None:
    runs.store.backend = LostAck(runs.store.backend, runs.flavor, step=2)
    calls: list[int] = []
    slept: list[float] = []

    def step(ctx: Any) -> Any:
        calls.append(ctx.step)
        return counter_step(ctx)

    run = runs.agent_run(initial_state=counter_state(), sleep=runs.sleeper(slept))
    result = run.run(step, max_steps=3)

    # Step 2 landed although its commit raised: the reload finds it and goes on at 3.
    # Overlapped, step 3 was computed while step 2 was unwritten: written with it,
    # guarded by it, it landed too (a history built step on step) and the reload finds
    # both; held back for the next transaction, it was dropped and computed again.
    assert calls in ([1, 2, 3], [1, 2, 3, 3]) if runs.overlap else calls == [1, 2, 3]
    assert len(slept) == 1
    assert core(result.state) == {"n": 3, "seen": [1, 2, 3]}
    assert [s.step for s in runs.check.steps(run.run_id)] == [0, 1, 2, 3]


def test_retries_are_bounded_then_the_run_is_failed(runs: Runs) -> None:
    slept: list[float] = []

    def step(ctx: Any) -> Any:
        raise TransientError("upstream down")

    run = runs.agent_run(initial_state={"n": 0}, retry=NO_JITTER, sleep=runs.sleeper(slept))
    with pytest.raises(RetriesExhaustedError, match="after 4 attempts") as caught:
        run.run(step)

    assert isinstance(caught.value.__cause__, TransientError)
    assert slept == [0.5, 1.0, 2.0]
    info = runs.check.get_run(run.run_id)
    assert info.status == "failed"
    assert "upstream down" in (info.error or "")
    assert info.head_step == 0


def test_fatal_error_marks_the_run_failed_and_is_raised(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        if ctx.step == 3:
            raise FatalError("the task is impossible")
        return counter_step(ctx)

    run = runs.agent_run(initial_state=counter_state())
    with pytest.raises(FatalError, match="impossible"):
        run.run(step)

    info = runs.check.get_run(run.run_id)
    assert info.status == "failed"
    assert info.error == "step 3: FatalError: the task is impossible"
    assert info.head_step == 2
    assert info.lease_owner is None

    # A failed run does not resume by itself ...
    with pytest.raises(RunFailedError):
        runs.agent_run(run.run_id).run(counter_step, max_steps=5)
    # ... until someone sets it active again.
    runs.check.set_status(run.run_id, "active")
    assert runs.agent_run(run.run_id).run(counter_step, max_steps=5).state["n"] == 5


def test_an_unexpected_exception_propagates_and_fails_the_run(runs: Runs) -> None:
    calls = 0

    def step(ctx: Any) -> Any:
        nonlocal calls
        calls += 1
        raise KeyError("bug in the agent")

    run = runs.agent_run(initial_state=counter_state())
    with pytest.raises(KeyError, match="bug in the agent"):
        run.run(step)
    assert calls == 1  # not retried
    info = runs.check.get_run(run.run_id)
    assert info.status == "failed"
    assert "KeyError" in (info.error or "")


def test_an_unstorable_state_fails_the_run_with_the_path_named(runs: Runs) -> None:
    from agentckpt import InvalidValueError

    def step(ctx: Any) -> Any:
        ctx.state["when"] = {1, 2}
        return ctx.state

    run = runs.agent_run(initial_state={})
    with pytest.raises(InvalidValueError, match="/when"):
        run.run(step)
    assert runs.check.get_run(run.run_id).status == "failed"


def test_an_interrupt_leaves_the_run_active_and_releases_the_lease(runs: Runs) -> None:
    # Ctrl-C in a sync worker; cancellation of the task in an async one.
    interrupt: type[BaseException] = (
        KeyboardInterrupt if runs.flavor == "sync" else asyncio.CancelledError
    )

    def step(ctx: Any) -> Any:
        if ctx.step == 2:
            raise interrupt
        return counter_step(ctx)

    run = runs.agent_run(initial_state=counter_state())
    with pytest.raises(interrupt):
        run.run(step)
    info = runs.check.get_run(run.run_id)
    assert (info.status, info.head_step, info.lease_owner) == ("active", 1, None)


# -- leases ---------------------------------------------------------------------------


def test_a_second_worker_cannot_open_a_run_with_a_live_lease(runs: Runs) -> None:
    run_id = uuid.uuid4()
    with runs.agent_run(run_id, initial_state={}, owner="worker-a"):
        other = runs.agent_run(run_id, owner="worker-b")
        with pytest.raises(LeaseHeldError, match="worker-a") as caught:
            other.open()
        assert caught.value.owner == "worker-a"
    # Released on close: now the other worker gets it, with a new epoch.
    with runs.agent_run(run_id, owner="worker-b") as again:
        assert again.lease.owner == "worker-b"
        assert again.lease.epoch == 2


def test_a_commit_after_a_takeover_is_fenced_and_writes_nothing(runs: Runs) -> None:
    run_id = uuid.uuid4()
    stale = runs.agent_run(run_id, initial_state=counter_state(), owner="old", heartbeat=False)
    stale.open()
    # More steps than an overlapped run computes ahead: some commit comes after the
    # takeover below.
    steps = stale.steps(counter_step, max_steps=30)
    assert [next(steps).step, next(steps).step] == [0, 1]
    # The lease is taken over (here: by force, as after an expiry) by another worker.
    runs.sql(
        "UPDATE runs SET lease_owner = 'new', lease_epoch = lease_epoch + 1 WHERE run_id = ?",
        str(run_id),
    )
    # LeaseLostError (a FencedError), as docs/runs.md says, although the heartbeat (off
    # here) never noticed (issue 12: a plain FencedError).
    yielded: list[int] = []
    with pytest.raises(LeaseLostError, match="taken over"):
        yielded.extend(info.step for info in steps)
    # Overlapped, later steps were sent before step 1 was yielded: those that landed
    # before the takeover are durable, and yielded; the next commit is fenced.
    assert yielded == list(range(2, 2 + len(yielded)))
    assert not yielded or runs.overlap
    info = runs.check.get_run(run_id)
    assert info.head_step == (yielded or [1])[-1]
    assert info.status == "active"  # not marked by the stale worker
    assert info.lease_owner == "new"
    stale.close()
    assert runs.check.get_run(run_id).lease_owner == "new"  # close released nothing


def test_the_same_owner_takes_over_its_own_lease_at_once(runs: Runs) -> None:
    run_id = uuid.uuid4()
    first = runs.agent_run(run_id, initial_state={}, owner="pod-0", heartbeat=False)
    first.open()  # then "crashes" without releasing
    second = runs.agent_run(run_id, owner="pod-0")
    with second:
        assert second.lease.epoch == first.lease.epoch + 1


# -- effects --------------------------------------------------------------------------


def test_an_effect_runs_once_and_is_replayed_on_retry(runs: Runs) -> None:
    sent: list[str] = []
    slept: list[float] = []

    def send(key: str) -> dict[str, Any]:
        sent.append(key)
        return {"message_id": f"m-{len(sent)}", "key": key}

    def step(ctx: Any) -> Any:
        receipt = ctx.effect("send-email", send)
        if ctx.attempt == 1:
            raise TransientError("the step fails after the email went out")
        ctx.state["receipt"] = receipt
        return ctx.state

    run = runs.agent_run(initial_state={}, sleep=runs.sleeper(slept))
    result = run.run(step, max_steps=1)

    key = idempotency_key(run.run_id, 1, "send-email")
    assert sent == [key]  # acted once
    assert result.state["receipt"] == {"message_id": "m-1", "key": key}


def test_effects_are_keyed_by_run_step_and_key(runs: Runs) -> None:
    calls: list[tuple[int, str]] = []

    def step(ctx: Any) -> Any:
        for name in ("a", "b"):
            ctx.state[f"{ctx.step}{name}"] = ctx.effect(
                name, lambda key, name=name: calls.append((ctx.step, name)) or key
            )
        return ctx.state

    run = runs.agent_run(initial_state={})
    result = run.run(step, max_steps=2)
    assert calls == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]
    assert len(set(result.state.values())) == 4
    assert result.state["1a"] == idempotency_key(run.run_id, 1, "a")


def test_a_recorded_effect_wins_over_a_later_one(runs: Runs) -> None:
    """Two workers racing on one effect both get the first recorded result."""
    run_id = uuid.uuid4()
    run = runs.agent_run(run_id, initial_state={})
    effects = run.inner._effects
    first = runs.do(effects.record(run_id, 1, "charge", {"charge": "ch_1"}))
    second = runs.do(effects.record(run_id, 1, "charge", {"charge": "ch_2"}))
    assert first == second == {"charge": "ch_1"}


def test_idempotency_keys_are_deterministic_across_processes() -> None:
    run_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert idempotency_key(run_id, 7, "email") == idempotency_key(run_id, 7, "email")
    assert idempotency_key(run_id, 7, "email") != idempotency_key(run_id, 8, "email")
    # Fixed forever: changing it would repeat effects of runs in flight during an upgrade.
    assert idempotency_key(run_id, 7, "email") == "090ab096-2c7e-5577-b5eb-7b4eff8678cc"


def test_effects_of_pruned_steps_are_forgotten(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        ctx.state["r"] = ctx.effect("e", lambda key: ctx.step)
        return ctx.state

    run = runs.agent_run(initial_state={"prompt": PROMPT}, snapshot_interval=4)
    run.run(step, max_steps=10)
    kept = [row[0] for row in runs.sql("SELECT step FROM effects ORDER BY step")]
    assert kept == [8, 9, 10]


def test_a_snapshot_after_an_effect_prunes_it_and_one_without_deletes_nothing_new(
    runs: Runs,
) -> None:
    """The journal skips the prune statement while it has recorded nothing since the last
    one; an effect recorded after that makes the next snapshot prune again."""

    def step(ctx: Any) -> Any:
        if ctx.step in (1, 2, 9):
            ctx.state["r"] = ctx.effect("e", lambda key: ctx.step)
        return ctx.state

    # A state that changes at three steps of twelve would wait for its share of changes
    # before a snapshot (SnapshotPolicy.chain_share); this test needs them at 4 and 8.
    fixed = type(runs.store)(runs.store.backend, policy=SnapshotPolicy(chain_share=0))
    run = runs.agent_run(store=fixed, initial_state={"prompt": PROMPT}, snapshot_interval=4)
    for info in run.steps(step, max_steps=12):
        if info.step == 11:
            # Snapshots at 4 (prunes 1 and 2) and 8 (nothing recorded since: skipped).
            # Overlapped, step 12 (the next snapshot) may have been sent before 11 was
            # yielded: if it has landed, it pruned 9 too.
            kept = [row[0] for row in runs.sql("SELECT step FROM effects")]
            assert kept in ([9], []) if runs.overlap else kept == [9]
    assert runs.sql("SELECT step FROM effects") == []


def test_a_resumed_run_prunes_the_effects_an_earlier_process_recorded(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        if ctx.step <= 3:
            ctx.state["r"] = ctx.effect("e", lambda key: ctx.step)
        return ctx.state

    first = runs.agent_run(initial_state={"prompt": PROMPT}, snapshot_interval=4)
    first.run(step, max_steps=3)
    runs.check.set_status(first.run_id, "active")  # reaching max_steps completed it
    assert len(runs.sql("SELECT step FROM effects")) == 3
    # A new worker (a new journal) has recorded nothing, but must not skip the prune.
    runs.agent_run(first.run_id, initial_state={"prompt": PROMPT}, snapshot_interval=4).run(
        step, max_steps=6
    )
    assert runs.sql("SELECT step FROM effects") == []


def test_an_async_effect_accepts_a_sync_action(url: str) -> None:
    """AsyncStepContext.effect takes a plain function too (issue 12: a bare TypeError)."""

    async def main() -> Any:
        store = await AsyncStore.connect(url)

        async def act(key: str) -> dict[str, str]:
            return {"async": key}

        async def step(ctx: Any) -> Any:
            plain = await ctx.effect("plain", lambda key: {"plain": key})
            awaited = await ctx.effect("awaited", act)
            return Finish({"plain": plain, "awaited": awaited})

        try:
            return await AsyncAgentRun(store, initial_state={}).run(step)
        finally:
            await store.close()

    result = asyncio.run(main())
    assert result.state == {
        "plain": {"plain": idempotency_key(result.run_id, 1, "plain")},
        "awaited": {"async": idempotency_key(result.run_id, 1, "awaited")},
    }
