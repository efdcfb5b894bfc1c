"""Real processes killed with SIGKILL or frozen with SIGSTOP, on SQLite and PostgreSQL.

The seed's first proof: an agent killed at step 37 resumes at step 38 in a new process,
and its final output equals that of a run that never crashed. The kill tests run the
agent twice: through the sync ``AgentRun``, and through ``AsyncAgentRun(overlap=True)``,
which computes step N+1 while step N's commit is in flight (``OVERLAP``), and is also
killed at random points of its pipeline.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import IO, Any

import pytest

from agentckpt import Store
from agentckpt.runs import AgentRun, LeaseHeldError, RecoveryWorker
from agentckpt.runs.pipeline_async import DEFAULT_AHEAD, DEFAULT_AHEAD_HELD
from tests.crash import run_agent as agent_proc

pytestmark = pytest.mark.crash

AGENT = str(Path(agent_proc.__file__))
STEPS = 60
# The agent's options per loop: the sync loop, the overlapped asyncio loop.
MODES = {"sync": (), "overlap": ("--overlap",)}


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The agent process's run loop (its command-line options)."""
    return MODES[request.param]


def start(url: str, run_id: uuid.UUID, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, AGENT, url, str(run_id), str(STEPS), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def read_until(stream: IO[str] | None, prefix: str, seen: list[str]) -> str:
    """Read lines until one starts with ``prefix``; fail if the process ends first."""
    assert stream is not None
    for line in stream:
        seen.append(line.strip())
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"process ended before {prefix!r}; it printed {seen[-5:]}")


def finish(url: str, run_id: uuid.UUID, *args: str) -> tuple[list[str], dict[str, Any]]:
    """Run the agent to the end in a new process: its COMMITTED steps and final state."""
    done = subprocess.run(
        [sys.executable, AGENT, url, str(run_id), str(STEPS), *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stdout.splitlines()
    committed = [line for line in lines if line.startswith("COMMITTED")]
    final = json.loads(next(line for line in lines if line.startswith("FINAL "))[6:])
    return committed, final


def kill(child: subprocess.Popen[str]) -> list[str]:
    """SIGKILL ``child``; the lines it printed that were not read yet."""
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)  # reap it and close its pipes
    assert child.returncode == -signal.SIGKILL
    return [line.strip() for line in (rest or "").splitlines()]


def window(url: str) -> int:
    """How many steps the overlapped loop computes ahead of the last durable one by
    default on ``url``'s database (AsyncAgentRun's ``ahead``)."""
    return DEFAULT_AHEAD_HELD if url.startswith("sqlite") else DEFAULT_AHEAD


def reference(url: str) -> dict[str, Any]:
    """The final state of a run that never crashed."""
    _, final = finish(url, uuid.uuid4())
    return final


def test_killed_at_step_37_resumes_at_38_and_ends_as_an_uncrashed_run(
    url: str, mode: tuple[str, ...]
) -> None:
    run_id = uuid.uuid4()
    child = start(url, run_id, "--pause-after", "37", "--owner", "worker-1", *mode)
    seen: list[str] = []
    read_until(child.stdout, "PAUSED 37", seen)  # step 37 is durable; the agent waits
    kill(child)
    assert seen[-2:] == ["COMMITTED 37", "PAUSED 37"]

    with Store.connect(url) as store:
        # Overlapped, later steps were computed and may have been written with 37 (or
        # sent before it was yielded).
        latest = store.latest(run_id).step
        assert latest == 37 or (mode and 37 < latest <= 37 + window(url))
        assert store.get_run(run_id).status == "active"

    # The same worker identity restarts at once (its old lease is its own).
    committed, final = finish(url, run_id, "--owner", "worker-1", *mode)
    assert committed[0] == f"COMMITTED {latest + 1}"
    assert committed[-1] == f"COMMITTED {STEPS}"
    assert final == reference(url)
    assert final["document"]["$blob"].startswith("sha256:")  # large outputs were offloaded


def test_a_kill_inside_a_step_replays_its_effect_from_the_journal(
    url: str, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    run_id = uuid.uuid4()
    effects = tmp_path / "external-system.log"
    child = start(
        url, run_id, "--hold-in-step", "38", "--owner", "w", "--effects", str(effects), *mode
    )
    read_until(child.stdout, "HOLDING 38", [])  # the tool ran and was recorded; not committed
    kill(child)

    committed, final = finish(url, run_id, "--owner", "w", "--effects", str(effects), *mode)
    assert committed[0] == "COMMITTED 38"
    calls = [line.split() for line in effects.read_text().splitlines()]
    steps_called = [int(step) for step, _ in calls]
    assert steps_called == list(range(1, STEPS + 1))  # step 38's tool ran exactly once
    assert final == reference(url)


@pytest.mark.parametrize("seed", [1, 2])
def test_an_overlapped_run_killed_at_random_points_loses_no_acknowledged_step(
    url: str, tmp_path: Path, seed: int
) -> None:
    """SIGKILL at random points of the overlapped loop's pipeline (a step computing, the
    one before it in flight, the next queued behind it, an effect running), three times:
    every step printed as committed is stored, no tool runs twice for a step (beyond the
    documented window: killed after the action, before its result was recorded, which
    the idempotency key closes), and the resumed run ends as an uncut one."""
    rng = random.Random(seed)
    run_id = uuid.uuid4()
    effects = tmp_path / "external-system.log"
    options = ("--owner", "w", "--effects", str(effects), "--overlap")
    acknowledged = -1
    for _ in range(3):
        child = start(url, run_id, *options)
        seen: list[str] = []
        # A few steps in, then a random instant (a sub-millisecond sleep lands it
        # anywhere in a step's pipeline, not only just after a line was printed).
        target = min(acknowledged + rng.randint(3, 15), STEPS - 5)
        read_until(child.stdout, f"COMMITTED {target}", seen)
        time.sleep(rng.random() * 0.004)
        seen += kill(child)
        acknowledged = max(int(line.split()[1]) for line in seen if line.startswith("COMMITTED"))
        with Store.connect(url) as store:
            # Every acknowledged step is there; beyond it at most the steps computed and
            # not yet acknowledged: the overlapped loop's window.
            latest = store.latest(run_id).step
            assert acknowledged <= latest <= acknowledged + window(url)
    committed, final = finish(url, run_id, *options)
    assert committed[-1] == f"COMMITTED {STEPS}"
    assert final == reference(url)
    calls = [line.split() for line in effects.read_text().splitlines()]
    keys_by_step: dict[int, set[str]] = {}
    for step, key in calls:
        keys_by_step.setdefault(int(step), set()).add(key)
    # Each step's tool ran with one idempotency key, once per step bar at most one
    # repeat per kill (the at-least-once window), never twice more.
    assert sorted(keys_by_step) == list(range(1, STEPS + 1))
    assert all(len(keys) == 1 for keys in keys_by_step.values())
    assert len(calls) - STEPS <= 3


def test_a_frozen_owner_is_fenced_after_another_worker_takes_over(
    url: str, mode: tuple[str, ...]
) -> None:
    run_id = uuid.uuid4()
    old = start(url, run_id, "--hold-in-step", "4", "--owner", "old", "--ttl", "1", *mode)
    # Steps 0-3 committed by the old owner (overlapped, step 4's effect waited for 3).
    read_until(old.stdout, "HOLDING 4", [])
    old.send_signal(signal.SIGSTOP)  # frozen: no heartbeat, no progress
    try:
        with Store.connect(url) as store:
            new = AgentRun(store, run_id, owner="new", lease_ttl=30)
            deadline = time.monotonic() + 60
            while True:  # wait for the frozen owner's lease to expire
                try:
                    new.open()
                    break
                except LeaseHeldError:
                    assert time.monotonic() < deadline, "the frozen owner's lease never expired"
                    time.sleep(0.1)
            step = agent_proc.make_step(marker="new")
            for info in new.steps(step):
                if info.step == 6:
                    break
            new.close()
    finally:
        old.send_signal(signal.SIGCONT)
    assert old.stdin is not None
    old.stdin.write("go\n")
    old.stdin.flush()
    out, _ = old.communicate(timeout=60)

    assert old.returncode == 3, out
    assert "FENCED" in out
    with Store.connect(url) as store:
        assert store.latest(run_id).step == 6
        for number in (4, 5, 6):
            assert store.state_at(run_id, number).state["by"] == "new"
        assert "by" not in store.state_at(run_id, 3).state
        assert store.get_run(run_id).lease_epoch == 2


def test_a_recovery_worker_resumes_a_killed_run(url: str) -> None:
    run_id = uuid.uuid4()
    child = start(url, run_id, "--pause-after", "20", "--ttl", "1")
    read_until(child.stdout, "PAUSED 20", [])
    kill(child)

    resumed_at: list[int | None] = []

    def resume(run: Any) -> Any:
        resumed_at.append(run.step)
        return run.run(agent_proc.make_step(), max_steps=STEPS).state

    with Store.connect(url) as store:
        worker = RecoveryWorker(store, owner="rescuer", lease_ttl=30)
        worker.register(agent_proc.AGENT_ID, resume)
        deadline = time.monotonic() + 60
        recovered = worker.recover_once()
        while not recovered:  # the dead worker's lease runs out after about a second
            assert time.monotonic() < deadline, "the orphan was never claimed"
            time.sleep(0.1)
            recovered = worker.recover_once()
    assert [(r.run_id, r.error) for r in recovered] == [(run_id, None)]
    assert resumed_at == [20]
    assert json.loads(json.dumps(recovered[0].result)) == reference(url)
