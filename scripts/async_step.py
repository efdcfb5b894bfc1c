"""The benchmark's long run through ``AsyncAgentRun``, for the async step's figures.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/async_step.py KEYS STEPS [--dir DIR] [--profile OUT]
        [--rounds R]

Drives ``AsyncAgentRun`` as the benchmark's ``AgentckptRun`` does (lease, heartbeat, a
snapshot every 20 steps, each step replacing 1 to 3 of the 30 or 300 keys of
``agentckpt.bench.longrun``) on a fresh SQLite file in ``DIR`` (default: a new directory
under ``/tmp``, the disk the benchmark's files are on) and prints, per round, the wall
and the process CPU per step (both threads) and the steps per second. ``--profile``
writes a cProfile of the last round (the event loop's thread only). Under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``, ``(count(320) - count(20)) /
300`` is the async step's instructions, as ``scripts/step_cpu.py`` gives the sync one's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import tempfile
import time
import uuid
from typing import Any

from agentckpt.bench.longrun import generate_long_run
from agentckpt.runs import AsyncAgentRun, AsyncStepContext
from agentckpt.store.store_async import AsyncStore


async def _round(directory: str, keys: int, steps: int, profile: cProfile.Profile | None) -> None:
    spec = generate_long_run(0, max(steps, 1000), keys)
    store = await AsyncStore.connect(f"sqlite:///{directory}/{uuid.uuid4().hex}.db")

    async def step(ctx: AsyncStepContext) -> Any:
        ctx.state.update(spec.steps[ctx.step - 1])
        return ctx.state

    run = AsyncAgentRun(
        store,
        spec.run_id,
        agent_id="long-run",
        initial_state=dict(spec.initial),
        snapshot_interval=20,
    )
    async with run:
        iterator = run.steps(step, max_steps=steps).__aiter__()
        await iterator.__anext__()  # step 0: the initial state
        wall, cpu = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        count = 0
        async for _ in iterator:
            count += 1
        if profile is not None:
            profile.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await store.close()
    print(
        f"{keys} keys: {1e3 * wall / count:.3f} ms wall, {1e3 * cpu / count:.3f} ms CPU "
        f"per step, {count / wall:.0f} steps/s over {count}"
    )


def main() -> None:
    """Run the rounds; print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", type=int)
    parser.add_argument("steps", type=int)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="async-step-")
    for number in range(args.rounds):
        last = number == args.rounds - 1
        profile = cProfile.Profile() if args.profile and last else None
        asyncio.run(_round(directory, args.keys, args.steps, profile))
        if profile is not None:
            profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()
