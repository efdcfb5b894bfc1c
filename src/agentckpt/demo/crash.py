"""Run the demo agent in a subprocess, SIGKILL it mid-run, resume it, compare.

:func:`run_demo` is what ``agentckpt demo`` runs. The agent is a real process killed
with SIGKILL (no chance to clean up or flush anything), and a new process resumes it
from the store alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt._core.codec import encode
from agentckpt.demo import agent
from agentckpt.store.store import Store


class DemoError(Exception):
    """The demo agent process failed for a reason other than the planned SIGKILL."""


@dataclass(slots=True)
class DemoResult:
    """What the demo saw and measured."""

    run_id: str
    steps: int
    killed_after: int | None = None
    exit_status: int | None = None
    resumed_from: int = 0
    resume_ms: float | None = None
    equal: bool = False
    blobs_verified: int = 0
    kept_rows: int = 0
    stored_bytes: int = 0
    blob_bytes: int = 0
    full_state_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def _agent_command(url: str, run_id: str, steps: int, think: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agentckpt.demo.agent",
        url,
        run_id,
        str(steps),
        "--think",
        str(think),
    ]


def _run_agent(
    command: list[str],
    *,
    kill_at: int | None,
    on_step: Callable[[int], None],
) -> tuple[int, int | None, float | None]:
    """Run one agent process; ``(exit status, last step seen, resume read ms)``."""
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert child.stdout is not None
    assert child.stderr is not None
    last: int | None = None
    resume_ms: float | None = None
    try:
        for line in child.stdout:
            parts = line.split()
            if parts[:1] == ["RESUME"]:
                resume_ms = float(parts[2])
            elif parts[:1] == ["STEP"]:
                last = int(parts[1])
                on_step(last)
                if kill_at is not None and last >= kill_at:
                    child.send_signal(signal.SIGKILL)
                    break
    finally:
        child.wait()
        errors = child.stderr.read()
        child.stdout.close()
        child.stderr.close()
    if child.returncode not in (0, -signal.SIGKILL):
        detail = errors.strip().splitlines()[-1] if errors.strip() else "no error output"
        raise DemoError(f"the demo agent process failed (exit {child.returncode}): {detail}")
    return child.returncode, last, resume_ms


def _blob_refs(value: Any) -> list[BlobRef]:
    if is_ref(value):
        return [BlobRef.from_json(value)]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in _blob_refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _blob_refs(item)]
    return []


def run_demo(
    url: str,
    *,
    steps: int = 60,
    kill_at: int = 37,
    think: float = 0.05,
    say: Callable[[str], None] = print,
    on_step: Callable[[str, int], None] | None = None,
) -> DemoResult:
    """Kill the agent with SIGKILL after step ``kill_at``, resume it, check it is exact.

    ``think`` is the scripted model's latency per step, which keeps the agent running
    long enough for the kill to land mid-run. ``say`` prints a line of the story;
    ``on_step(phase, step)`` reports each durable step (phase ``"first"`` or
    ``"resumed"``), e.g. to draw a progress bar.
    """
    if not 0 < kill_at < steps:
        raise DemoError(f"--kill-at must be between 1 and {steps - 1} (--steps - 1)")
    result = DemoResult(run_id=str(uuid.uuid4()), steps=steps)
    command = _agent_command(url, result.run_id, steps, think)
    report = on_step or (lambda phase, n: None)

    say(f"1. an agent process starts run {result.run_id} ({steps} steps)")
    status, last, _ = _run_agent(command, kill_at=kill_at, on_step=lambda n: report("first", n))
    result.exit_status, result.killed_after = status, last
    if status == 0:
        raise DemoError(
            "the agent finished before the SIGKILL landed; run again with more --steps "
            "or a larger --think"
        )
    say(f"2. SIGKILL after step {last} was durable (exit status {status})")

    with Store.connect(url) as store:
        latest = store.latest(result.run_id)
    result.resumed_from = latest.step if latest else 0
    say(f"3. a new process resumes from the store at step {result.resumed_from}")
    status, _, result.resume_ms = _run_agent(
        command, kill_at=None, on_step=lambda n: report("resumed", n)
    )
    say(f"   it ran steps {result.resumed_from + 1}..{steps} and exited ({status})")

    expected = agent.expected_state(steps)
    with Store.connect(url) as store:
        final = store.latest(result.run_id)
        if final is None:
            raise DemoError(f"run {result.run_id} has no steps after the resumed run")
        result.equal = final.step == steps and final.state == expected
        for ref in _blob_refs(final.state):
            store.get_blob(result.run_id, ref)  # verified against its sha256
            result.blobs_verified += 1
            result.blob_bytes += ref.size
        kept = store.steps(result.run_id)
    result.kept_rows = len(kept)
    result.stored_bytes = sum(info.stored_bytes for info in kept)
    state = agent.initial_state()
    for n in range(1, steps + 1):
        state, _ = agent.step(state, n)
        result.full_state_bytes += len(encode(state))
    verdict = "EQUAL" if result.equal else "DIFFERENT"
    say(f"4. final state vs. an uncrashed run's: {verdict}")
    return result
