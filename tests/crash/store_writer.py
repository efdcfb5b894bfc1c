"""A writer for the crash tests: commits steps until it is killed.

    python tests/crash/store_writer.py URL RUN_ID
    python tests/crash/store_writer.py --group URL RUN_ID [RUN_ID ...]

Resumes the run from ``store.latest()`` and commits step after step; the state of each
step is :func:`expected_state` of its number, so whoever reads the run afterwards knows
exactly what every kept step must hold. After each commit returns it prints
``ACK <step>`` and flushes: a step printed is a step the store acknowledged as durable.
Snapshots (and the prunes they trigger) come every 5 steps, so a kill often lands in one.

With ``--group`` one asyncio task per run commits through one ``AsyncStore``, so the
runs' commits travel in shared batches (group commit); each step's state is tagged with
its run, and each acknowledgement is printed as ``ACK <run_id> <step>``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentckpt import AsyncStore, SnapshotPolicy, Store

POLICY = SnapshotPolicy(interval=5)
MAX_STEPS = 1_000_000


def expected_state(step: int, tag: str = "") -> dict[str, Any]:
    """The state committed as ``step``: a conversation growing by one message per step.

    ``tag`` names the run when one process writes several (group_writer.py), so a write
    that landed in another run's place would show.
    """
    state: dict[str, Any] = {"run": tag} if tag else {}
    return state | {
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


async def agent(store: AsyncStore, run_id: str) -> None:
    """Commit steps of one run, as one of many agents of a process."""
    latest = await store.latest(run_id)
    step = 0 if latest is None else latest.step
    expected = expected_state(step, tag=run_id)
    if latest is not None and json.dumps(latest.state) != json.dumps(expected):
        print(f"BAD {run_id} resumed state at step {step}", flush=True)
        raise SystemExit(3)
    print(f"START {run_id} {step}", flush=True)
    while step < MAX_STEPS:
        step += 1
        info = await store.commit(run_id, expected_state(step, tag=run_id), step=step)
        if info.step != step:
            print(f"BAD {run_id} committed step {info.step}, wanted {step}", flush=True)
            raise SystemExit(4)
        print(f"ACK {run_id} {step}", flush=True)


async def group_main(url: str, run_ids: list[str]) -> int:
    async with await AsyncStore.connect(url, policy=POLICY) as store:
        await asyncio.gather(*(agent(store, run_id) for run_id in run_ids))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--group":
        sys.exit(asyncio.run(group_main(sys.argv[2], sys.argv[3:])))
    sys.exit(main(sys.argv[1], sys.argv[2]))
