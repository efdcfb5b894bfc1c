"""Leases, the heartbeat and the recovery worker, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from agentckpt import Store
from agentckpt._backends.factory import parse_url
from agentckpt.runs import LeaseLostError
from agentckpt.runs.leases import Leases
from tests.integration.runs.conftest import Runs
from tests.support.dbsql import run_sql
from tests.support.runs import counter_state, counter_step


def expire_lease(where: str | Runs, run_id: uuid.UUID) -> None:
    """Move the run's lease expiry a minute into the past (instead of waiting for it);
    ``where``: a store URL, or the runs whose loop must keep running meanwhile
    (:meth:`Runs.sql`)."""
    url = where if isinstance(where, str) else where.url
    if parse_url(url).dialect == "sqlite":
        past = "strftime('%Y-%m-%dT%H:%M:%f', 'now', '-60 seconds')"
    else:
        past = "now() - interval '60 seconds'"
    query = f"UPDATE runs SET lease_expires_at = {past} WHERE run_id = ?"
    if isinstance(where, str):
        run_sql(url, query, str(run_id))
    else:
        where.sql(query, str(run_id))


def crashed_run(runs: Runs, agent_id: str, steps: int) -> uuid.UUID:
    """A run whose worker committed ``steps`` steps, then died holding the lease."""
    run = runs.agent_run(
        initial_state=counter_state(), agent_id=agent_id, owner="dead", heartbeat=False
    )
    run.open()
    produced = run.steps(counter_step)
    for _ in range(steps + 1):
        next(produced)
    # No close(): the worker "died"; its lease stays until it expires.
    return run.run_id


def test_the_heartbeat_renews_and_notices_a_takeover(runs: Runs) -> None:
    run = runs.agent_run(initial_state=counter_state(), heartbeat=False)
    run.open()
    heartbeat = run.inner._heartbeat
    before = run.lease.expires_at
    assert runs.do(heartbeat.beat()) is True
    assert run.lease.expires_at >= before
    assert run.lease.epoch == 1

    runs.sql(
        "UPDATE runs SET lease_owner = 'thief', lease_epoch = 7 WHERE run_id = ?",
        str(run.run_id),
    )
    assert runs.do(heartbeat.beat()) is False
    assert heartbeat.lost

    def step(ctx: Any) -> Any:
        raise AssertionError("a worker that lost its lease must not run a step")

    with pytest.raises(LeaseLostError, match="taken over"):
        run.run(step)
    assert runs.check.get_run(run.run_id).lease_owner == "thief"


def test_the_heartbeat_runs_in_the_background(runs: Runs) -> None:
    run = runs.agent_run(initial_state=counter_state(), lease_ttl=0.3)

    def step(ctx: Any) -> Any:
        # Stay inside the step until the heartbeat has renewed the lease twice.
        first = runs.check.get_run(ctx.run_id).heartbeat_at
        renewals = 0
        deadline = time.monotonic() + 30
        last = first
        while renewals < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
            now = runs.check.get_run(ctx.run_id).heartbeat_at
            if now != last:
                renewals, last = renewals + 1, now
        ctx.state["renewals"] = renewals
        return ctx.state

    result = run.run(step, max_steps=1)
    assert result.state["renewals"] == 2


def test_recovery_claims_expired_runs_of_registered_agents_only(runs: Runs) -> None:
    orphan = crashed_run(runs, "planner", 2)
    live = crashed_run(runs, "planner", 1)
    other_agent = crashed_run(runs, "coder", 1)
    finished = runs.agent_run(initial_state=counter_state(), agent_id="planner")
    finished.run(counter_step, max_steps=1)
    for run_id in (orphan, other_agent, finished.run_id):
        expire_lease(runs, run_id)

    resumed: list[tuple[uuid.UUID, int | None, int]] = []

    def resume(run: Any) -> Any:
        resumed.append((run.run_id, run.step, run.lease.epoch))
        return run.run(counter_step, max_steps=5).state["seen"]

    worker = runs.recovery_worker(owner="rescuer", lease_ttl=30)
    worker.register("planner", resume)
    recovered = runs.do(worker.recover_once())

    assert [(r.run_id, r.agent_id, r.epoch, r.error) for r in recovered] == [
        (orphan, "planner", 2, None)
    ]
    assert recovered[0].result == [1, 2, 3, 4, 5]
    # Overlapped, later steps were sent before step 2 was yielded: they may have landed.
    assert [(run_id, epoch) for run_id, _, epoch in resumed] == [(orphan, 2)]
    head = resumed[0][1]
    assert head == 2 or (runs.overlap and head is not None and 2 < head <= 2 + runs.ahead)
    assert runs.check.get_run(orphan).status == "completed"
    assert runs.check.get_run(live).lease_owner == "dead"  # its lease is still live
    assert runs.do(worker.recover_once()) == []


def test_a_stale_worker_is_fenced_after_recovery(runs: Runs) -> None:
    run = runs.agent_run(
        initial_state=counter_state(), agent_id="planner", owner="dead", heartbeat=False
    )
    run.open()
    produced = run.steps(counter_step)
    next(produced), next(produced)  # steps 0 and 1
    expire_lease(runs, run.run_id)

    worker = runs.recovery_worker(owner="rescuer")
    worker.register("planner", lambda r: r.run(counter_step, max_steps=3))
    assert len(runs.do(worker.recover_once())) == 1

    yielded: list[int] = []
    with pytest.raises(LeaseLostError):  # the old worker wakes up
        yielded.extend(info.step for info in produced)
    # Overlapped, later steps were sent before step 1 was yielded: those that landed
    # before the takeover are durable, and yielded; the next commit is fenced.
    assert yielded == list(range(2, 2 + len(yielded)))
    assert not yielded or runs.overlap
    latest = runs.check.latest(run.run_id)
    assert latest is not None
    assert latest.step == max([3, *yielded])


def test_a_failing_factory_is_reported_and_the_worker_goes_on(runs: Runs) -> None:
    first = crashed_run(runs, "planner", 1)
    second = crashed_run(runs, "planner", 1)
    for run_id in (first, second):
        expire_lease(runs, run_id)
    calls: list[uuid.UUID] = []

    def resume(run: Any) -> Any:
        calls.append(run.run_id)
        if len(calls) == 1:
            raise RuntimeError("factory bug")
        return run.run(counter_step, max_steps=2).status

    worker = runs.recovery_worker()
    worker.register("planner", resume)
    recovered = runs.do(worker.recover_once())
    assert sorted(calls) == sorted([first, second])
    assert isinstance(recovered[0].error, RuntimeError)
    assert recovered[1].result == "completed"


def test_concurrent_recovery_workers_never_claim_the_same_run(url: str) -> None:
    with Store.connect(url) as store:
        orphans = []
        for _ in range(8):
            info = store.create_run(agent_id="planner")
            Leases(store).acquire(info.run_id, "dead", 30)
            expire_lease(url, info.run_id)
            orphans.append(info.run_id)

    claimed: dict[str, list[uuid.UUID]] = {"a": [], "b": []}
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        with Store.connect(url, migrate=False) as store:
            leases = Leases(store)
            barrier.wait()
            while True:
                got = leases.claim_orphans(
                    f"worker-{name}", 30, kind="run", agent_ids=["planner"], limit=1
                )
                if not got:
                    return
                claimed[name].extend(run_id for run_id, _ in got)

    threads = [threading.Thread(target=worker, args=(n,)) for n in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed["a"] + claimed["b"]) == sorted(orphans)
    assert not set(claimed["a"]) & set(claimed["b"])


def test_a_run_whose_worker_died_before_its_first_step_is_resumed(runs: Runs) -> None:
    """open() stores the initial state (step 0) durably, so a recovery worker with no
    initial state of its own resumes the run (issue 12: it had no checkpoint)."""
    run = runs.agent_run(
        initial_state=counter_state(), agent_id="planner", owner="dead", heartbeat=False
    )
    run.open()  # then the process dies: no step ran, no close()
    assert runs.check.latest(run.run_id).step == 0
    expire_lease(runs, run.run_id)

    worker = runs.recovery_worker(owner="rescuer")
    worker.register("planner", lambda r: r.run(counter_step, max_steps=3).state["seen"])
    (recovered,) = runs.do(worker.recover_once())
    assert (recovered.run_id, recovered.error, recovered.result) == (run.run_id, None, [1, 2, 3])
    assert runs.check.get_run(run.run_id).status == "completed"


def test_runs_made_by_create_run_become_claimable(runs: Runs) -> None:
    """A run made with store.create_run() that nobody opens is an orphan once its
    claim_after has passed (issue 12: it had no lease expiry and was never claimed)."""
    fresh = runs.do(runs.store.create_run(agent_id="planner"))
    unopened = runs.do(runs.store.create_run(agent_id="planner", claim_after=0))
    assert runs.check.get_run(fresh.run_id).lease_expires_at is not None
    time.sleep(0.01)  # the expiry is strictly in the past

    worker = runs.recovery_worker(
        owner="rescuer", run_options={"initial_state": {"n": 0, "seen": []}}
    )
    worker.register("planner", lambda r: r.run(counter_step, max_steps=2).state["seen"])
    recovered = runs.do(worker.recover_once())
    assert [(r.run_id, r.error, r.result) for r in recovered] == [(unopened.run_id, None, [1, 2])]
    # Its creator may still open the fresh one at once (nobody holds its lease).
    opened = runs.agent_run(fresh.run_id, initial_state=counter_state())
    assert opened.run(counter_step, max_steps=1).status == "completed"
