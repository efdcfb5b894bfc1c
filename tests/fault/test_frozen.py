"""A frozen primary (SIGSTOP): without a client-side deadline every commit would block in
the driver forever (the server's kernel still acknowledges every TCP segment, so
``tcp_user_timeout`` and keepalives never fire). With it, a commit raises
``OutcomeUnknownError`` and a read ``UnavailableError`` soon after the deadline, the
connection is discarded, and the retry lands on whichever server is primary."""

from __future__ import annotations

import time

import pytest

from agentckpt import AgentRun, OutcomeUnknownError, SnapshotPolicy, Store, UnavailableError
from agentckpt._compat.deadline import GRACE
from tests.clusters.replication import ReplicatedPair
from tests.fault.support import Agents, Figures

pytestmark = [pytest.mark.fault, pytest.mark.timeout(120)]

KEEP_ALL = SnapshotPolicy(prune=False)
DEADLINE = 2.0
# The deadline, the cancel's grace, and slack for two busy cores.
BOUND = DEADLINE + GRACE + 2.0


def test_a_frozen_primary_ends_each_call_at_the_deadline_and_the_retry_lands_after_failover(
    pg_sync_pair: ReplicatedPair,
) -> None:
    # Two pooled connections: the commit's is cut at the deadline, the read's is cut too
    # (or, once the pool replaced them, no new one can be had within `wait`).
    with Store.connect(
        pg_sync_pair.url,
        deadline=DEADLINE,
        wait=DEADLINE,
        outage_limit=0,
        policy=KEEP_ALL,
        pool_min=2,
    ) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pg_sync_pair.primary.freeze()

        started = time.monotonic()
        with pytest.raises(OutcomeUnknownError, match="deadline"):
            store.commit(run.run_id, {"n": 2})
        assert time.monotonic() - started < BOUND
        started = time.monotonic()
        with pytest.raises(UnavailableError):
            store.latest(run.run_id)
        assert time.monotonic() - started < BOUND

        # The frozen server is fenced (killed) and the standby takes over.
        pg_sync_pair.failover()
        info = store.commit(run.run_id, {"n": 2})
        assert info.step == 2
        assert store.latest(run.run_id).state == {"n": 2}  # type: ignore[union-attr]
        assert pg_sync_pair.standby.scalar("SELECT count(*) FROM agentckpt.steps") == 2


def test_a_commit_that_timed_out_on_a_frozen_primary_may_land_when_it_thaws(
    pg_async_pair: ReplicatedPair,
) -> None:
    """Outcome unknown means it: the statement was already in the server's socket
    buffer, so the thawed server commits it. The retry is recognised as that commit."""
    with Store.connect(
        pg_async_pair.url, deadline=DEADLINE, outage_limit=0, policy=KEEP_ALL
    ) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pg_async_pair.primary.freeze()
        with pytest.raises(OutcomeUnknownError):
            store.commit(run.run_id, {"n": 2})
        pg_async_pair.primary.thaw()
        landed = pg_async_pair.primary.scalar(
            "SELECT count(*) FROM agentckpt.steps WHERE run_id = %s", [run.run_id]
        )
        info = store.commit(run.run_id, {"n": 2})
        assert (info.step, info.write_version) == (2, 1)
        steps = pg_async_pair.primary.sql(
            "SELECT step FROM agentckpt.steps WHERE run_id = %s ORDER BY step", [run.run_id]
        )
        assert steps == [(1,), (2,)]
        print(f"the timed-out commit had {'landed' if landed == 2 else 'not landed'} on thaw")


def test_a_run_loop_agent_goes_on_by_itself_after_its_primary_froze_and_was_replaced(
    pg_sync_pair: ReplicatedPair,
) -> None:
    agents = Agents()
    store = Store.connect(pg_sync_pair.url, deadline=DEADLINE, outage_limit=60)

    def agent(agents: Agents) -> None:
        run = AgentRun(store, initial_state={"n": 0}, heartbeat=False)

        def step(ctx: object) -> object:
            state = ctx.state  # type: ignore[attr-defined]
            state["n"] += 1
            time.sleep(0.02)
            return state

        for info in run.steps(step):
            agents.ack(run.run_id, info.step, None)
            if agents.stop.is_set():
                break

    try:
        agents.start("runner", agent)
        time.sleep(1.5)
        frozen_at = time.monotonic()
        pg_sync_pair.primary.freeze()
        time.sleep(1.0)
        pg_sync_pair.failover()
        promoted_at = time.monotonic()
        deadline = time.monotonic() + 30
        while agents.first_ack_after(promoted_at) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        agents.join()
    finally:
        agents.stop.set()
        store.close()
    assert not agents.errors, agents.errors
    resumed = agents.first_ack_after(promoted_at)
    assert resumed is not None, "the agent did not go on against the new primary"
    figures = Figures(
        acked=agents.total(),
        outage_seconds=resumed - agents.last_ack_before(frozen_at),
        extra={"after_promotion": round(resumed - promoted_at, 2)},
    )
    figures.show("frozen primary, run loop")
    # Within the deadline (the hung commit), the promotion, and one retry.
    assert resumed - promoted_at < BOUND
    with Store.connect(pg_sync_pair.url) as check:
        ((run_id, acks),) = agents.acked.items()
        assert check.latest(run_id).step >= max(step for step, _ in acks)  # type: ignore[union-attr]
