"""A deterministic sample agent: a scripted "model" and tools, no network.

Run as a process: ``python -m agentckpt.demo.agent URL RUN_ID STEPS [--think SECONDS]``.
It resumes the run from its latest checkpoint (or starts it), then commits one step per
loop iteration and prints ``STEP <n>`` once that step is durable. The same inputs always
give the same states, so a crashed-and-resumed run can be compared with an uncrashed
one (:func:`expected_state`).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

from agentckpt.records import Checkpoint
from agentckpt.store.store import Store

AGENT_ID = "demo-agent"
TOOLS = ("search", "calculator", "read_file")
CONFIG: dict[str, Any] = {
    "model": "scripted-model-1",
    "lora_adapters": ["trip-planner-lora-v1"],
    "temperature": 0.0,
    "max_tokens": 512,
    "tool_registry": list(TOOLS),
}
# Every tenth step reads a "file" large enough to be stored as a blob, not in the state.
BLOB_EVERY = 10
BLOB_BYTES = 8_000


def initial_state() -> dict[str, Any]:
    """The state the agent starts from."""
    return {
        "version": 1,
        "messages": [{"role": "user", "content": "Plan a three-city trip by train."}],
        "notes": {},
        "files_read": 0,
    }


def _seed(n: int) -> str:
    return hashlib.sha256(f"step-{n}".encode()).hexdigest()


def file_contents(n: int) -> bytes:
    """The bytes the ``read_file`` tool returns at step ``n`` (deterministic)."""
    line = f"step {n} itinerary {_seed(n)}\n".encode()
    return (line * (BLOB_BYTES // len(line) + 1))[:BLOB_BYTES]


def step(state: dict[str, Any], n: int) -> tuple[dict[str, Any], bytes | None]:
    """One agent step: the model picks a tool and the tool's result is appended.

    Returns the new state and, when the tool produced a large output, its bytes (the
    state then holds a blob reference in its place).
    """
    seed = _seed(n)
    tool = "read_file" if n % BLOB_EVERY == 0 else TOOLS[int(seed[:2], 16) % 2]
    call = {"id": f"call_{n}", "tool_name": tool, "arguments": {"query": f"leg {n}"}}
    state["messages"].append(
        {"role": "assistant", "content": f"Step {n}: I will use {tool}.", "tool_calls": [call]}
    )
    blob: bytes | None = None
    if tool == "read_file":
        blob = file_contents(n)
        ref, _ = Store.prepare_blob(blob)
        content: Any = ref.to_json()
        state["files_read"] += 1
    else:
        content = f"{tool} result {seed[8:24]}"
    state["messages"].append(
        {"role": "tool", "tool_call_id": f"call_{n}", "name": tool, "content": content}
    )
    state["notes"][f"step_{n}"] = seed[24:32]
    return state, blob


def expected_state(steps: int) -> dict[str, Any]:
    """The state of an uncrashed run after ``steps`` steps, computed in memory."""
    state = initial_state()
    for n in range(1, steps + 1):
        state, _ = step(state, n)
    return state


def _metadata(n: int) -> dict[str, Any]:
    return {"steps": n, "input_tokens": 120 * n, "output_tokens": 40 * n}


def run(
    url: str, run_id: str, steps: int, *, think: float = 0.0, report: bool = True
) -> dict[str, Any]:
    """Resume ``run_id`` and run it to ``steps`` steps; returns the final state.

    ``think`` seconds pass before each step, as a model call would take.
    """
    with Store.connect(url) as store:
        store.create_run(run_id, agent_id=AGENT_ID, config=CONFIG, exist_ok=True)
        started = time.perf_counter()
        checkpoint: Checkpoint | None = store.latest(run_id)
        resumed_ms = (time.perf_counter() - started) * 1000
        state = checkpoint.state if checkpoint else initial_state()
        done = checkpoint.step if checkpoint else 0
        if report:
            print(f"RESUME {done} {resumed_ms:.1f}", flush=True)
        for n in range(done + 1, steps + 1):
            if think:
                time.sleep(think)
            state, blob = step(state, n)
            blobs = [Store.prepare_blob(blob)[1]] if blob is not None else []
            store.commit(run_id, state, step=n, metadata=_metadata(n), blobs=blobs)
            if report:
                print(f"STEP {n}", flush=True)
        if done < steps:
            store.set_status(run_id, "completed")
        return state


def main() -> None:
    """The agent process's entry point."""
    parser = argparse.ArgumentParser(prog="python -m agentckpt.demo.agent")
    parser.add_argument("url")
    parser.add_argument("run_id")
    parser.add_argument("steps", type=int)
    parser.add_argument("--think", type=float, default=0.0)
    args = parser.parse_args()
    run(args.url, args.run_id, args.steps, think=args.think)


if __name__ == "__main__":
    main()
