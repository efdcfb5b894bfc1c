"""The saturated conversation write phase alone, on SQLite, with CPU per write by thread.

The benchmark's agentckpt subject and workload (seed 0, 30 turns, ``--agents`` of them,
all at once as in ``--mode saturated``), in a new SQLite file: prints the writes, their
wall time, the process's CPU per write and the event loop thread's alone (the rest is
the SQLite worker thread's), and the collector's runs per generation. ``--setup-only``
stops before the writes: under ``valgrind --tool=callgrind --separate-threads=yes`` its
count, subtracted from a full run's, leaves the write phase's instructions by thread::

    PYTHONPATH=src valgrind --tool=callgrind --separate-threads=yes \\
        --callgrind-out-file=/tmp/me.cg python scripts/conv_write_phase.py --agents 20

``--batches`` also times each group-commit batch on the SQLite worker thread: how many
batches and writes each, the share of the write phase the worker spent in one, its
wall time and thread CPU a write inside them, and the gap between one batch's end and
the next one's start (the worker waking for it and taking the GIL back).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentckpt._backends import sqlite as sqlite_backend
from agentckpt.bench.driver import write_turn
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.agentckpt import Agentckpt, AgentckptConversations
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.workload import ConversationSpec, generate_conversations


async def agent(subject: AgentckptConversations, spec: ConversationSpec, writes: Latencies) -> None:
    for turn in spec.turns:
        await write_turn(subject, spec, turn, writes)


# (start, end, writes, worker thread CPU) of each batch, with --batches.
Batch = tuple[float, float, int, float]


def time_batches() -> list[Batch]:
    """Wrap ``SqliteBackend.commit_batch`` so that each batch is recorded."""
    batches: list[Batch] = []
    commit_batch = sqlite_backend.SqliteBackend.commit_batch

    def timed(self: sqlite_backend.SqliteBackend, writes: Sequence[Any]) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return commit_batch(self, writes)
        finally:
            batches.append((start, time.perf_counter(), len(writes), time.thread_time() - cpu))

    sqlite_backend.SqliteBackend.commit_batch = timed  # type: ignore[method-assign]
    return batches


def report_batches(batches: list[Batch]) -> None:
    """Print what ``time_batches`` recorded."""
    writes = sum(b[2] for b in batches)
    span = batches[-1][1] - batches[0][0]
    busy = sum(b[1] - b[0] for b in batches)
    cpu = sum(b[3] for b in batches)
    gaps = [later[0] - earlier[1] for earlier, later in itertools.pairwise(batches)]
    deciles = statistics.quantiles(gaps, n=10) if len(gaps) > 1 else [0.0] * 9
    print(
        f"batches {len(batches)}, {writes / len(batches):.1f} writes each; worker in a batch "
        f"{busy / span * 100:.0f} % of {span:.2f} s, {busy / writes * 1e6:.0f} us wall and "
        f"{cpu / writes * 1e6:.0f} us CPU a write; gap between batches P50 "
        f"{deciles[4] * 1e6:.0f} us, P90 {deciles[8] * 1e6:.0f} us"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--setup-only", action="store_true")
    parser.add_argument("--batches", action="store_true")
    args = parser.parse_args()
    batches = time_batches() if args.batches else None
    with tempfile.TemporaryDirectory(prefix="agentckpt-writes-") as directory:
        path = str(Path(directory) / "conversations.db")
        subject = await Agentckpt().conversations(Place("sqlite", path, path, 10))
        specs = generate_conversations(0, args.agents, args.turns)
        for spec in specs:
            await subject.start(spec)
        if not args.setup_only:
            if batches is not None:
                batches.clear()  # the setup's own
            writes = Latencies()
            cpu, loop_cpu, start = time.process_time(), time.thread_time(), time.perf_counter()
            await asyncio.gather(*(agent(subject, spec, writes) for spec in specs))
            wall = time.perf_counter() - start
            cpu, loop_cpu = time.process_time() - cpu, time.thread_time() - loop_cpu
            n = len(writes.samples)
            collections = [s["collections"] for s in gc.get_stats()]
            print(
                f"writes {n} wall {wall:.2f} s ({n / wall:.0f}/s), CPU per write "
                f"{cpu / n * 1e6:.0f} us (event loop thread {loop_cpu / n * 1e6:.0f} us), "
                f"collections by generation {collections}"
            )
            if batches:
                report_batches(batches)
        await subject.close()


if __name__ == "__main__":
    asyncio.run(main())
