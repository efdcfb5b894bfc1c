"""Run the demo agent in a subprocess, SIGKILL it mid-run, resume it, compare."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable

from .._sync.store import Store
from . import agent


def run_demo(
    url: str, *, steps: int = 60, kill_at: int = 37, say: Callable[[str], None] = print
) -> bool:
    """Kill the agent after step ``kill_at``, resume it, and check the result is exact."""
    run_id = str(uuid.uuid4())
    say(f"store: {url}")
    say(f"starting agent run {run_id} ({steps} steps) in a subprocess")
    child = subprocess.Popen(
        [sys.executable, "-m", "agentckpt.demo.agent", url, run_id, str(steps)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert child.stdout is not None
    for line in child.stdout:
        done = int(line.split()[1])
        if done % 10 == 0:
            say(f"  step {done} committed")
        if done >= kill_at:
            child.send_signal(signal.SIGKILL)
            break
    child.wait()
    say(f"SIGKILL sent after step {kill_at}: exit status {child.returncode}")

    with Store.connect(url) as store:
        latest = store.latest(run_id)
        resumed_from = latest.step if latest else 0
    say(f"a new process resumes after step {resumed_from}, the last durable one")
    resumed = subprocess.run(
        [sys.executable, "-m", "agentckpt.demo.agent", url, run_id, str(steps)],
        capture_output=True,
        text=True,
        check=True,
    )
    say(f"  resumed run finished: {resumed.stdout.count('STEP')} more steps")

    reference_id = str(uuid.uuid4())
    expected = agent.run(url, reference_id, steps, report=False)
    with Store.connect(url) as store:
        final = store.latest(run_id)
        assert final is not None
        equal: bool = final.state == expected
        kept = store.steps(run_id)
        stored = sum(info.stored_bytes for info in kept)
    say(f"final state equals an uncrashed run's: {equal}")
    say(f"storage: {len(kept)} rows kept for {steps} steps, {stored} bytes of payload")
    return equal
