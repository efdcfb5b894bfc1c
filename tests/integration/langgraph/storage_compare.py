"""Storage of a messages-append LangGraph graph: agentckpt's saver vs LangGraph's PostgresSaver.

Both savers run the same graph (a chat node answering from LangGraph's fake chat model) for
the same number of turns on one thread, each in its own fresh PostgreSQL schema; then the
bytes of their tables are compared. Run it by hand for other sizes::

    python -m tests.integration.langgraph.storage_compare --turns 200 \
        --dsn postgresql://root@127.0.0.1:5432/test

It needs ``langgraph`` and ``langgraph-checkpoint-postgres``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

WORDS = [
    "the",
    "agent",
    "reads",
    "the",
    "file",
    "and",
    "calls",
    "the",
    "search",
    "tool",
    "then",
    "summarises",
    "what",
    "it",
    "found",
    "about",
    "checkpoint",
    "storage",
    "delta",
    "snapshot",
    "blob",
    "recovery",
    "crash",
    "resume",
    "thread",
    "state",
    "message",
    "history",
    "tokens",
    "cost",
    "latency",
    "database",
    "durable",
    "commit",
]

AGENTCKPT_TABLES = ("runs", "steps", "blobs", "run_threads", "step_index", "step_writes")
LANGGRAPH_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@dataclass(frozen=True)
class Usage:
    """Bytes a saver used: row bytes (sum of pg_column_size) and on-disk relation bytes."""

    row_bytes: int
    disk_bytes: int


def replies(seed: int = 7) -> Iterator[str]:
    """Deterministic assistant replies of about 300 characters."""
    rng = random.Random(seed)
    while True:
        yield " ".join(rng.choice(WORDS) for _ in range(50))


def build_graph(checkpointer: Any) -> Any:
    """A one-node chat graph: each turn appends the user message and the model's reply."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import START, MessagesState, StateGraph

    model = GenericFakeChatModel(messages=iter(replies()))

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=checkpointer)


def run_turns(checkpointer: Any, turns: int, thread_id: str = "storage") -> list[Any]:
    """Run ``turns`` turns on one thread; returns the final message list."""
    from langchain_core.messages import HumanMessage

    graph = build_graph(checkpointer)
    config = {"configurable": {"thread_id": thread_id}}
    out: dict[str, Any] = {}
    for turn in range(turns):
        out = graph.invoke({"messages": [HumanMessage(f"question {turn}: what next?")]}, config)
    return list(out["messages"])


def usage(dsn: str, schema: str, tables: tuple[str, ...]) -> Usage:
    """Row bytes and relation bytes (with indexes and TOAST) of ``tables`` in ``schema``.

    Tables are compacted first (VACUUM FULL), so that dead row versions (agentckpt updates
    its runs row on every commit) do not count against either saver.
    """
    rows = disk = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in tables:
            name = f'"{schema}".{table}'
            conn.execute(f"VACUUM FULL {name}")
            cur = conn.execute(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {name} t")
            rows += int(cur.fetchone()[0])  # type: ignore[index]
            cur = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (name,))
            disk += int(cur.fetchone()[0])  # type: ignore[index]
    return Usage(rows, disk)


def compare(dsn: str, turns: int) -> tuple[Usage, Usage]:
    """Run both savers for ``turns`` turns; returns (agentckpt, PostgresSaver) usage."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from agentckpt.integrations.langgraph import AgentckptSaver

    ours = f"cmp_a_{uuid.uuid4().hex[:10]}"
    theirs = f"cmp_l_{uuid.uuid4().hex[:10]}"
    base = dsn.split("?")[0]
    try:
        with AgentckptSaver.from_url(f"{base}?schema={ours}") as saver:
            mine = run_turns(saver, turns)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{theirs}"')
        with PostgresSaver.from_conn_string(
            f"{base}?options=-csearch_path%3D{theirs}"
        ) as reference:
            reference.setup()
            other = run_turns(reference, turns)
        assert [m.content for m in mine] == [m.content for m in other]
        return usage(base, ours, AGENTCKPT_TABLES), usage(base, theirs, LANGGRAPH_TABLES)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            for schema in (ours, theirs):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="postgresql://root@127.0.0.1:5432/test")
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 50, 100, 200])
    args = parser.parse_args(argv)
    print(
        f"{'turns':>6} {'agentckpt rows':>15} {'PostgresSaver rows':>19} {'ratio':>6}"
        f" {'agentckpt disk':>15} {'PostgresSaver disk':>19} {'ratio':>6}"
    )
    for turns in itertools.chain(args.turns):
        a, b = compare(args.dsn, turns)
        print(
            f"{turns:>6} {a.row_bytes:>15,} {b.row_bytes:>19,} {b.row_bytes / a.row_bytes:>5.1f}x"
            f" {a.disk_bytes:>15,} {b.disk_bytes:>19,} {b.disk_bytes / a.disk_bytes:>5.1f}x"
        )


if __name__ == "__main__":
    main()
