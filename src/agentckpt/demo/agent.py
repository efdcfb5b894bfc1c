"""A deterministic sample agent: a scripted "model" and tools, no network.

Run as a process: ``python -m agentckpt.demo.agent URL RUN_ID STEPS``. It resumes the run
from its latest checkpoint, then commits one step per loop iteration and prints
``STEP <n>`` once that step is durable.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from .._sync.store import Store

TOOLS = ("search", "calculator", "read_file")


def initial_state() -> dict[str, Any]:
    """The state the agent starts from."""
    return {"messages": [{"role": "user", "content": "Plan a three-city trip."}], "notes": {}}


def step(state: dict[str, Any], n: int) -> dict[str, Any]:
    """One agent step: the scripted model picks a tool; the tool's result is appended."""
    seed = hashlib.sha256(f"step-{n}".encode()).hexdigest()
    tool = TOOLS[int(seed[:2], 16) % len(TOOLS)]
    state["messages"].append(
        {"role": "assistant", "content": f"thinking {seed[:8]}", "tool_call": tool}
    )
    state["messages"].append({"role": "tool", "name": tool, "content": f"result {seed[8:24]}"})
    state["notes"][f"step_{n}"] = seed[24:32]
    return state


def run(url: str, run_id: str, steps: int, *, report: bool = True) -> dict[str, Any]:
    """Resume ``run_id`` and run it to ``steps`` steps; returns the final state."""
    with Store.connect(url) as store:
        store.create_run(run_id, agent_id="demo-agent", exist_ok=True)
        checkpoint = store.latest(run_id)
        state = checkpoint.state if checkpoint else initial_state()
        done = checkpoint.step if checkpoint else 0
        for n in range(done + 1, steps + 1):
            state = step(state, n)
            store.commit(run_id, state, step=n)
            if report:
                print(f"STEP {n}", flush=True)
        return state


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]))
