"""The event loop's own work per conversation write, without the database or its thread.

The benchmark's conversation workload (seed 0, ``--agents`` conversations of 30 turns),
its agentckpt subject on a new SQLite file, but every step's write acknowledged at once
instead of sent: the group commit is replaced by a coroutine that returns ``Committed``
(and marks the payload packed, uncompressed: zstd runs on the SQLite worker's thread).
What is left is the Python work a write costs the event loop thread (conversation API,
plan, store), one thread and no waits, so its instruction count is stable and quick to
take. Run it with two ``--turns`` under callgrind and difference the totals::

    PYTHONPATH=src valgrind --tool=callgrind --callgrind-out-file=/tmp/a.cg \\
        python scripts/conv_loop_cost.py --turns 5
    PYTHONPATH=src valgrind --tool=callgrind --callgrind-out-file=/tmp/b.cg \\
        python scripts/conv_loop_cost.py --turns 25

(instructions of b minus a, divided by the difference of the writes they print). Not a
substitute for ``conv_write_phase.py``: the hand-off to the SQLite worker, the packing
on its thread and the asyncio wake-ups are not here.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from agentckpt._core.writes import Committed, StepWrite
from agentckpt.bench.driver import write_turn
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.agentckpt import Agentckpt
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.workload import generate_conversations


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--turns", type=int, default=30, help="turns written (of 30)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentckpt-loop-") as directory:
        path = str(Path(directory) / "conversations.db")
        subject = await Agentckpt().conversations(Place("sqlite", path, path, 10))
        specs = generate_conversations(0, args.agents, 30)
        for spec in specs:
            await subject.start(spec)
        now = datetime.now(UTC)
        committed = Committed(now, now)

        async def acknowledge(write: StepWrite) -> Committed:
            # Packed as the SQLite worker would, but not compressed: zstd runs on the
            # worker's thread, not the loop's, and would only add noise here.
            payload = write.stored
            if not payload.is_packed():
                payload._stored, payload._raw = ("json", payload._raw), None  # type: ignore[assignment]
            return committed

        subject.store._group.commit = acknowledge  # type: ignore[method-assign]
        writes = Latencies()
        start = time.thread_time()
        for spec in specs:
            for turn in spec.turns[: args.turns]:
                await write_turn(subject, spec, turn, writes)
        cpu = time.thread_time() - start
        n = len(writes.samples)
        print(f"writes {n}, CPU per write {cpu / n * 1e6:.1f} us")
        await subject.close()


if __name__ == "__main__":
    asyncio.run(main())
