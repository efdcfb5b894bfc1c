"""Client memory with many active runs, measured in a fresh interpreter.

``python -m agentckpt.bench.curves.memory URL RUNS`` opens one ``AsyncStore`` on ``URL``,
creates ``RUNS`` runs and commits one step to each (100 workers), and prints one JSON
object: the process's RSS (``/proc/self/statm``, after ``gc.collect()``) before and
after, and how many heads the store's cache holds against its limit. A fresh process,
because a benchmark process that has already freed memory reuses it, and its RSS would
not grow at all.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from pathlib import Path

from agentckpt.store import store_async
from agentckpt.store.store_async import AsyncStore

__all__ = ["main", "measure"]


def _rss() -> int:
    gc.collect()
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


async def measure(url: str, runs: int) -> dict[str, int]:
    """Commit one step to each of ``runs`` new runs; RSS and head cache figures."""
    store = await AsyncStore.connect(url)
    try:
        # One run first, so that connections, statement caches and imports are warm.
        warm = await store.create_run(agent_id="warm-up")
        await store.commit(warm.run_id, {"step": 1})
        before = _rss()
        # 100 workers taking the next index, not one task per run waiting on a gate: the
        # harness must not hold memory per run itself.
        indexes = iter(range(runs))
        done = 0

        async def worker() -> None:
            nonlocal done
            for index in indexes:
                run = await store.create_run(agent_id=f"agent-{index}")
                await store.commit(run.run_id, {"step": 1, "note": f"run {index} " * 8})
                done += 1

        await asyncio.gather(*(worker() for _ in range(100)))
        after = _rss()
        # The head cache is private; its size is what "bounded" means here.
        return {
            "runs": done,
            "rss_before": before,
            "rss_after": after,
            "cached_heads": len(store._heads),
            "cache_limit": store_async._HEAD_CACHE_SIZE,
        }
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> int:
    """Print the figures of ``measure(URL, RUNS)`` as one JSON line."""
    url, runs = argv if argv is not None else sys.argv[1:]
    print(json.dumps(asyncio.run(measure(url, int(runs)))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
