"""The saturated conversation write phase alone, on SQLite, with CPU per write by thread.

The benchmark's agentckpt subject and workload (seed 0, 30 turns, ``--agents`` of them,
all at once as in ``--mode saturated``), in a new SQLite file: prints the writes, their
wall time, the process's CPU per write and the event loop thread's alone (the rest is
the SQLite worker thread's), and the collector's runs per generation. ``--setup-only``
stops before the writes: under ``valgrind --tool=callgrind --separate-threads=yes`` its
count, subtracted from a full run's, leaves the write phase's instructions by thread::

    PYTHONPATH=src valgrind --tool=callgrind --separate-threads=yes \\
        --callgrind-out-file=/tmp/me.cg python scripts/conv_write_phase.py --agents 20
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from pathlib import Path

from agentckpt.bench.driver import write_turn
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.agentckpt import Agentckpt, AgentckptConversations
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.workload import ConversationSpec, generate_conversations


async def agent(subject: AgentckptConversations, spec: ConversationSpec, writes: Latencies) -> None:
    for turn in spec.turns:
        await write_turn(subject, spec, turn, writes)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--setup-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentckpt-writes-") as directory:
        path = str(Path(directory) / "conversations.db")
        subject = await Agentckpt().conversations(Place("sqlite", path, path, 10))
        specs = generate_conversations(0, args.agents, args.turns)
        for spec in specs:
            await subject.start(spec)
        if not args.setup_only:
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
        await subject.close()


if __name__ == "__main__":
    asyncio.run(main())
