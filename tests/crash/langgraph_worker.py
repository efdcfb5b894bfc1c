"""A LangGraph graph that a test kills with SIGKILL half-way and then resumes.

    python lg_crash_worker.py URL THREAD_ID RUNS_FILE [--hang NODE] [--durability MODE]

The graph runs a -> b -> (c1 and c2 in parallel) -> d -> e; every node appends its name to
the ``log`` channel and records that it ran in RUNS_FILE (one line per execution, fsynced).
With ``--hang c2`` node c2 waits until c1's write is durable in the store, prints ``HANG``
and sleeps until it is killed. Without it, ``invoke`` starts the thread or, if the thread
has a checkpoint, resumes it; the final state is printed as JSON.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sys
import time
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from agentckpt.integrations.langgraph import AgentckptSaver


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("thread_id")
    parser.add_argument("runs_file")
    parser.add_argument("--hang")
    parser.add_argument("--durability", default="async", choices=["sync", "async"])
    args = parser.parse_args()
    config: RunnableConfig = {"configurable": {"thread_id": args.thread_id}}

    with AgentckptSaver.from_url(args.url) as saver:

        def ran(name: str) -> None:
            with open(args.runs_file, "a", encoding="utf-8") as f:
                f.write(name + "\n")
                f.flush()
                os.fsync(f.fileno())

        def wait_for_c1_write() -> None:
            # Not a timing assertion: a guard so a broken run ends instead of hanging.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                latest = saver.get_tuple(config)
                writes = latest.pending_writes if latest else None
                if any(value == ["c1"] for _, _, value in writes or ()):
                    return
                time.sleep(0.05)
            sys.exit("c1's write never became visible")

        def node(name: str, weight: int) -> Any:
            def run(state: State) -> dict[str, Any]:
                ran(name)
                if name == args.hang:
                    wait_for_c1_write()
                    print("HANG", flush=True)
                    time.sleep(3600)
                return {"log": [name], "total": weight * (len(state["log"]) + 1)}

            return run

        builder = StateGraph(State)
        for name, weight in [("a", 1), ("b", 2), ("c1", 3), ("c2", 4), ("d", 5), ("e", 6)]:
            builder.add_node(name, node(name, weight))
        builder.add_edge(START, "a")
        builder.add_edge("a", "b")
        builder.add_edge("b", "c1")
        builder.add_edge("b", "c2")
        builder.add_edge(["c1", "c2"], "d")
        builder.add_edge("d", "e")
        builder.add_edge("e", END)
        graph = builder.compile(checkpointer=saver)

        started = saver.get_tuple(config) is not None
        inputs = None if started else {"log": [], "total": 0}
        final = graph.invoke(inputs, config, durability=args.durability)
        print(json.dumps({"resumed": started, "state": final}), flush=True)


if __name__ == "__main__":
    main()
