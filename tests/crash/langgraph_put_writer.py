"""A writer for the power-loss test: puts LangGraph checkpoints through the saver until
killed.

    python tests/crash/langgraph_put_writer.py URL THREAD_ID

Reads the thread, checks its checkpoints are exactly ``checkpoint(1) .. checkpoint(n)``
(each the child of the one before), prints ``START n``, then puts ``checkpoint(n + 1)``,
... with a pending write on each, printing ``ACK <n>`` once ``put`` has returned
(durable).
"""

from __future__ import annotations

import sys
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from agentckpt.integrations.langgraph import AgentckptSaver


def checkpoint_id(n: int) -> str:
    """The id of the ``n``-th checkpoint: ordered like LangGraph's (greater is newer)."""
    return f"1ef4f797-8335-6428-8001-{n:012d}"


def values(n: int) -> dict[str, Any]:
    """The channel values of the ``n``-th checkpoint: a growing log and a counter."""
    return {"n": n, "log": [f"step {i} " + "." * (i % 5) for i in range(1, n + 1)]}


def thread_config(thread_id: str, n: int | None = None) -> RunnableConfig:
    """The thread's config, naming the ``n``-th checkpoint when ``n`` is given."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if n is not None:
        configurable["checkpoint_id"] = checkpoint_id(n)
    return cast(RunnableConfig, {"configurable": configurable})


def main(url: str, thread_id: str) -> int:
    with AgentckptSaver.from_url(url) as saver:
        stored = list(saver.list(thread_config(thread_id)))
        n = len(stored)
        for got, k in zip(stored, range(n, 0, -1), strict=True):
            saved = got.checkpoint
            if saved["id"] != checkpoint_id(k) or saved["channel_values"] != values(k):
                print(f"BAD resumed checkpoint {k}", flush=True)
                return 3
        print(f"START {n}", flush=True)
        while True:
            n += 1
            checkpoint = empty_checkpoint()
            checkpoint["id"] = checkpoint_id(n)
            checkpoint["channel_values"] = values(n)
            checkpoint["channel_versions"] = {"n": n, "log": n}
            parent = thread_config(thread_id, n - 1 if n > 1 else None)
            metadata: Any = {"source": "loop", "step": n}
            config = saver.put(parent, checkpoint, metadata, {"n": n})
            saver.put_writes(config, [("log", f"pending {n}")], task_id=f"task-{n}")
            print(f"ACK {n}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
