"""The framework adapters redact before storing: a LangGraph graph's messages and tool
results, an OpenAI Agents SDK session's items; the stored bytes are searched."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.redaction import DEFAULT_REDACTORS, placeholder, records_in
from tests.integration.redaction.stored import stored_bytes


def _secrets() -> dict[str, str]:
    token = uuid.uuid4().hex
    return {
        "openai_key": f"sk-proj-{token}{token}",
        "email": f"ada.{token[:8]}@example.org",
        "github_token": f"ghp_{(token + token)[:36]}",
    }


def test_langgraph_messages_and_tool_results_are_redacted(url: str, tmp_path: Path) -> None:
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from agentckpt.integrations.langgraph import AgentckptSaver

    secrets = _secrets()

    def bot(state: MessagesState) -> dict[str, Any]:
        call = {"name": "lookup", "args": {"token": secrets["github_token"]}, "id": "c1"}
        return {
            "messages": [
                AIMessage("", tool_calls=[call]),
                ToolMessage(f"owner is {secrets['email']}", tool_call_id="c1"),
                AIMessage("done; release 2024-01-15 v1.2.3"),
            ]
        }

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    with AgentckptSaver.from_url(url, redactors=DEFAULT_REDACTORS) as saver:
        graph = builder.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t1"}}
        graph.invoke({"messages": [HumanMessage(f"my key is {secrets['openai_key']}")]}, cfg)
        state = graph.get_state(cfg)
        messages = state.values["messages"]
        assert messages[0].content == f"my key is {placeholder('openai_key')}"
        assert messages[1].tool_calls[0]["args"]["token"] == placeholder("github_token")
        assert messages[2].content == f"owner is {placeholder('email')}"
        kinds = {r["kind"] for r in state.metadata["redactions"]}
        assert kinds == {"openai_key", "github_token", "email"}
        assert all("REDACTED" not in r["path"] for r in state.metadata["redactions"])
    stored = stored_bytes(url, tmp_path)
    for kind, secret in secrets.items():
        assert secret.encode() not in stored, kind
    assert b"release 2024-01-15 v1.2.3" in stored


async def test_an_agents_sdk_session_stores_items_redacted(url: str, tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents.session import AgentckptSession

    secrets = _secrets()
    with AgentckptSession("s1", url=url, redactors=DEFAULT_REDACTORS) as session:
        await session.add_items([{"role": "user", "content": "hi, nothing secret"}])
        await session.add_items(
            [
                {"role": "user", "content": f"key {secrets['openai_key']}"},
                {"role": "assistant", "content": f"mail {secrets['email']}"},
            ]
        )
        items = await session.get_items()
        assert items[1]["content"] == f"key {placeholder('openai_key')}"
        run_id = session.run_id
    with Store.connect(url) as store:
        records = records_in(store.get_run(run_id).metadata)
    assert {s: [(r.path, r.kind) for r in found] for s, found in records.items()} == {
        2: [("/items/1/content", "openai_key"), ("/items/2/content", "email")]
    }
    stored = stored_bytes(url, tmp_path)
    for kind, secret in secrets.items():
        assert secret.encode() not in stored, kind
    assert b"hi, nothing secret" in stored
