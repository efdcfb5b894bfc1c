"""The LangGraph saver on an encrypted store: checkpoints and their blobs are sealed and
read back (its own tables, step_index and step_writes, stay in clear: docs/security.md)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from agentckpt import SnapshotPolicy, Store
from agentckpt.integrations.langgraph import AgentckptSaver
from tests.integration.crypto.support import SECRET, encryption
from tests.support.sample_store import raw_sql

# LangGraph lists every checkpoint: the saver needs a store that keeps them.
KEEP = SnapshotPolicy(prune=False)


def test_a_graph_on_an_encrypted_store_keeps_its_payloads_sealed(url: str) -> None:
    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"{SECRET} " + "x" * 40_000)]}  # a blob

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    cfg = {"configurable": {"thread_id": "t"}}
    with Store.connect(url, encryption=encryption(), policy=KEEP) as store:
        graph = builder.compile(checkpointer=AgentckptSaver(store=store))
        graph.invoke({"messages": [HumanMessage(SECRET)]}, cfg)
    with Store.connect(url, encryption=encryption(), policy=KEEP) as store:
        graph = builder.compile(checkpointer=AgentckptSaver(store=store))
        messages = graph.get_state(cfg).values["messages"]
        assert messages[0].content == SECRET
        assert messages[1].content.startswith(SECRET)
    for table, column in (("steps", "payload"), ("blobs", "data")):
        stored = raw_sql(url, f"SELECT codec, {column} FROM {table}")
        assert stored, table
        for codec, data in stored:
            assert codec.endswith("+sealed")
            assert SECRET.encode() not in bytes(data)
