"""Failover under load: several agents (long runs, conversations, a bare store writer)
commit while the primary is SIGKILLed and the standby promoted (``pg_ctl promote``).

With a synchronous standby (``synchronous_commit = on``) nothing acknowledged is lost,
every in-flight commit either lands or raises ``OutcomeUnknownError`` and lands when
retried, and the agents go on by themselves against the new primary. With an
asynchronous standby (the control) acknowledged commits can be lost, and the store says
so with ``AcknowledgedStepsLostError``. The figures are printed (``-s``).

``pg_auto_failover`` (Debian's ``postgresql-15-auto-failover``) is not used: a monitor
and two ``pg_autoctl``-managed nodes take tens of seconds to form, and its failure
detection waits ``node_considered_unhealthy_timeout`` (20 s) before promoting, which does
not fit the time budget of a test; ``pg_ctl promote`` exercises the same client path.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from agentckpt import (
    AcknowledgedStepsLostError,
    AgentRun,
    Conversations,
    OutcomeUnknownError,
    SnapshotPolicy,
    StaleHeadError,
    Store,
    UnavailableError,
)
from tests.clusters.replication import ReplicatedPair
from tests.fault.support import Agents, Figures, lost_steps, state

pytestmark = [pytest.mark.fault, pytest.mark.timeout(180)]

KEEP_ALL = SnapshotPolicy(prune=False)
LOAD_SECONDS = 2.0
AFTER_SECONDS = 2.0


def runner(store: Store, name: str) -> Any:
    """A run-loop agent: one step after another, each acknowledged once durable."""

    def body(agents: Agents) -> None:
        run = AgentRun(store, initial_state=state(name, 0), heartbeat=False, snapshot_interval=5)

        def step(ctx: Any) -> Any:
            time.sleep(0.01)
            return state(name, ctx.step)

        for info in run.steps(step):
            agents.ack(run.run_id, info.step, state(name, info.step))
            if agents.stop.is_set():
                return

    return body


def chatter(store: Store, name: str) -> Any:
    """A conversation agent: one turn (user message, assistant reply) after another."""

    def body(agents: Agents) -> None:
        conversations = Conversations(store)
        conv = conversations.start(agent_id=name, agent_config={"model": "m"}, tools=[])
        said: list[str] = []
        while not agents.stop.is_set():
            turn = len(said) // 2 + 1
            conv.add_user_message(f"{name} question {turn}")
            info = conv.add_assistant_message(f"{name} answer {turn}")
            assert info is not None
            said += [f"{name} question {turn}", f"{name} answer {turn}"]
            agents.ack(conv.conversation_id, info.step, list(said))

    return body


def bare(store: Store, name: str, figures: Figures) -> Any:
    """A writer on the store itself, riding out nothing: it sees each in-flight commit's
    OutcomeUnknownError (or UnavailableError) and retries the very same commit."""

    def body(agents: Agents) -> None:
        run = store.create_run()
        step = 0
        while not agents.stop.is_set():
            step += 1
            while True:
                try:
                    store.commit(run.run_id, state(name, step), step=step)
                    break
                except OutcomeUnknownError:
                    figures.outcome_unknown += 1
                except UnavailableError:
                    figures.unavailable += 1
                time.sleep(0.05)
            agents.ack(run.run_id, step, state(name, step))

    return body


def drive(pair: ReplicatedPair, *, cut: bool) -> tuple[Figures, Agents, list[Store], float]:
    figures = Figures()
    store = Store.connect(pair.url, deadline=5.0, outage_limit=60, policy=KEEP_ALL, pool_max=12)
    bare_store = Store.connect(pair.url, deadline=5.0, outage_limit=0, policy=KEEP_ALL)
    agents = Agents()
    try:
        agents.start("runner-1", runner(store, "runner-1"))
        agents.start("runner-2", runner(store, "runner-2"))
        agents.start("chat-1", chatter(store, "chat-1"))
        agents.start("chat-2", chatter(store, "chat-2"))
        agents.start("bare", bare(bare_store, "bare", figures))
        time.sleep(LOAD_SECONDS)
        if cut:
            pair.cut()  # the replica falls behind a second before the crash
            time.sleep(1.0)
        killed = time.monotonic()
        started = time.monotonic()
        pair.failover()
        promotion = time.monotonic() - started
        deadline = time.monotonic() + 30
        while not agents.each_acked_after(killed) and time.monotonic() < deadline:
            if agents.errors:
                break
            time.sleep(0.05)
        time.sleep(AFTER_SECONDS)
        agents.join()
    finally:
        agents.stop.set()
        bare_store.close()
    figures.acked = agents.total()
    figures.outage_seconds = agents.outage(killed)
    figures.extra["promotion_s"] = round(promotion, 2)
    return figures, agents, [store, bare_store], killed


def test_sync_standby_failover_under_load_loses_nothing_acknowledged(
    pg_sync_pair: ReplicatedPair,
) -> None:
    figures, agents, (store, _), killed = drive(pg_sync_pair, cut=False)
    try:
        assert not agents.errors, agents.errors
        assert agents.each_acked_after(killed), "an agent did not go on after the failover"
        with _fresh(pg_sync_pair) as check:
            figures.lost = lost_steps(check, agents)
    finally:
        store.close()
    figures.show("sync standby failover")
    assert figures.lost == 0
    # The agents went on by themselves within the promotion plus one retry (the deadline
    # of a commit stuck on the dead primary is not needed: a SIGKILL closes its sockets).
    assert figures.outage_seconds < float(figures.extra["promotion_s"]) + 5.0


def test_async_standby_failover_can_lose_acknowledged_commits_and_says_so(
    pg_async_pair: ReplicatedPair, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="agentckpt.store")
    figures, agents, stores, _ = drive(pg_async_pair, cut=True)
    store = stores[0]
    try:
        # The new primary's heads are older than steps the store acknowledged: each
        # agent's next commit there raises AcknowledgedStepsLostError, loudly, instead
        # of going on as if nothing had happened.
        with _fresh(pg_async_pair) as check:
            figures.lost = lost_steps(check, agents)
        counters: dict[str, int] = {}
        for each in stores:
            for name, count in each.counters.snapshot().items():
                counters[name] = counters.get(name, 0) + count
    finally:
        store.close()
    lost_errors = [e for e in agents.errors if isinstance(e, AcknowledgedStepsLostError)]
    figures.extra["lost_errors"] = len(lost_errors)
    figures.extra["lost_counted"] = counters.get("lost_steps", 0)
    figures.show("async standby failover (control)")
    # Cut a second before the crash, the replica had none of the last second's commits.
    assert figures.lost > 0
    assert lost_errors, agents.errors
    assert all(isinstance(e, StaleHeadError) for e in agents.errors), agents.errors
    for error in lost_errors:
        assert error.head_step is None or error.head_step < error.acknowledged_step
    assert counters["acknowledged_steps_lost"] == len(lost_errors)
    logged = [r for r in caplog.records if "acknowledged step(s) lost" in r.getMessage()]
    assert len(logged) == len(lost_errors)
    assert all(r.levelno == logging.ERROR for r in logged)


def _fresh(pair: ReplicatedPair) -> Store:
    return Store.connect(pair.url, policy=KEEP_ALL)
