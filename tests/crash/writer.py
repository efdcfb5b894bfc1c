"""A writer for the crash tests: commits steps until it is killed.

    python tests/crash/writer.py URL RUN_ID

Resumes the run from ``store.latest()`` and commits step after step; the state of each
step is :func:`expected_state` of its number, so whoever reads the run afterwards knows
exactly what every kept step must hold. After each commit returns it prints
``ACK <step>`` and flushes: a step printed is a step the store acknowledged as durable.
Snapshots (and the prunes they trigger) come every 5 steps, so a kill often lands in one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentckpt import SnapshotPolicy, Store

POLICY = SnapshotPolicy(interval=5)
MAX_STEPS = 1_000_000


def expected_state(step: int) -> dict[str, Any]:
    """The state committed as ``step``: a conversation growing by one message per step."""
    return {
        "messages": [
            {"role": "user" if i % 2 else "assistant", "content": f"message {i}" + "!" * (i % 5)}
            for i in range(1, step + 1)
        ],
        "counter": {
            "step": step,
            "square": step * step,
            "even": step % 2 == 0,
            "recent": list(range(max(1, step - 2), step + 1)),
            "half": step / 2,
        },
    }


def main(url: str, run_id: str) -> int:
    with Store.connect(url, policy=POLICY) as store:
        latest = store.latest(run_id)
        step = 0 if latest is None else latest.step
        if latest is not None and json.dumps(latest.state) != json.dumps(expected_state(step)):
            print(f"BAD resumed state at step {step}", flush=True)
            return 3
        print(f"START {step}", flush=True)
        while step < MAX_STEPS:
            step += 1
            info = store.commit(run_id, expected_state(step), step=step)
            if info.step != step:
                print(f"BAD committed step {info.step}, wanted {step}", flush=True)
                return 4
            print(f"ACK {step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
