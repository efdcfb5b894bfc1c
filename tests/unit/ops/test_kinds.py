"""How each kind of run is read from its stored JSON: layouts, transcripts, recovery.

Pure: states are built here as the integrations store them (LangGraph's wrappers are made
with LangGraph's own serializer when it is installed).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from agentckpt.ops import kinds
from agentckpt.ops.recovery import assess, pending_start
from agentckpt.ops.serde import Decoder, Undecoded
from agentckpt.ops.transcripts import transcript
from agentckpt.records import RunInfo

NOW = datetime(2025, 3, 15, 10, 0, tzinfo=UTC)


def run(kind: str, **fields: Any) -> RunInfo:
    values: dict[str, Any] = {
        "run_id": uuid4(),
        "kind": kind,
        "agent_id": "agent",
        "status": "active",
        "head_step": 2,
        "head_open": False,
        "snapshot_step": 1,
        "lease_owner": None,
        "lease_expires_at": None,
        "lease_epoch": 0,
        "heartbeat_at": NOW,
        "created_at": NOW,
        "updated_at": NOW,
        "parent_run_id": None,
        "parent_step": None,
        "config": {},
        "metadata": {},
    }
    return RunInfo(**(values | fields))


def test_kind_of_reads_the_run_kind_and_the_state() -> None:
    assert kinds.kind_of("langgraph", {"id": "c", "checkpoint": {}, "values": {}}) == "langgraph"
    assert kinds.kind_of("session", {"items": []}) == "session"
    assert kinds.kind_of("conversation", {"conversation": []}) == "conversation"
    assert kinds.kind_of("run", {"messages": []}) == "conversation"  # as the inspector did
    assert kinds.kind_of("run", {"n": 1}) == "run"
    # A kind whose state lacks its layout falls back to the state tree.
    assert kinds.kind_of("langgraph", {"n": 1}) == "run"
    assert kinds.kind_of("session", [1, 2]) == "run"
    assert kinds.title_of("langgraph", {"thread_id": "t-1"}) == "t-1"
    assert kinds.title_of("session", {"session_id": ""}) is None
    assert kinds.title_of("run", {"thread_id": "t-1"}) is None


def test_wrappers_and_write_payloads() -> None:
    ref = {
        "$blob": "sha256:" + "a" * 64,
        "uri": "db:sha256:" + "a" * 64,
        "size": 9,
        "codec": "none",
    }
    assert kinds.is_wrapper({"$serde": ["msgpack", "AA=="]})
    assert kinds.is_wrapper({"$text": ref})
    assert not kinds.is_wrapper({"$serde": [], "other": 1})
    assert [r.digest for r in kinds.wrapper_refs({"$serde": ["msgpack", ref]})] == ["a" * 64]
    assert list(kinds.wrapper_refs({"$serde": ["msgpack", "AA=="]})) == []
    for data in (b"tiny", b"x" * 4096):
        codec, stored = kinds.pack_payload(data)
        assert codec == ("none" if len(data) < 128 else "zstd")
        assert kinds.unpack_payload(codec, stored, where="w") == data


def test_the_langgraph_integration_uses_this_layout() -> None:
    pytest.importorskip("langgraph")
    from agentckpt.integrations.langgraph import codec, records, saver

    assert codec.SERDE_KEY is kinds.SERDE_KEY
    assert records.unpack_payload is kinds.unpack_payload
    assert saver.RUN_KIND == kinds.LANGGRAPH


def test_the_conversation_and_session_kinds_match_their_rooms() -> None:
    pytest.importorskip("agents")
    from agentckpt.conversation.model import ConversationMetadata
    from agentckpt.conversation.reader import KIND
    from agentckpt.integrations.openai_agents.session import RUN_KIND

    assert RUN_KIND == kinds.SESSION
    assert kinds.CONVERSATION == KIND
    assert set(kinds.USAGE_KEYS) <= set(ConversationMetadata.FIELDS)


def test_a_conversation_transcript_with_every_tool_call_format() -> None:
    state = {
        "conversation": [
            {"role": "user", "content": "hi", "timestamp": "t0"},
            {
                "role": "assistant",
                "content": "checking",
                "tool_calls": [
                    {"tool_name": "get_weather", "arguments": {"city": "B"}, "result": 12},
                    {"tool_name": "send_email", "arguments": {"to": "bob"}},
                ],
            },
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "u1", "name": "g", "input": {}}],
            },
        ]
    }
    found = transcript("conversation", state)
    assert found is not None
    assert [e.role for e in found.entries] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
    ]
    assert found.entries[0].fields == {"timestamp": "t0"}
    weather, email = found.entries[1].calls
    assert (weather.name, weather.has_result, weather.result) == ("get_weather", True, 12)
    assert (email.name, email.has_result) == ("send_email", False)
    assert found.entries[2].calls[0].arguments == {"a": 1}  # JSON text parsed
    assert found.entries[3].answers == "c1"
    assert found.entries[3].heading == "tool result"
    dangling = [call.name for _, _, call in found.dangling()]
    assert dangling == ["send_email", "g"]  # f is answered by the tool message
    later = transcript("conversation", state, start=3)
    assert later is not None
    assert [e.index for e in later.entries] == [3, 4]


def test_a_session_transcript() -> None:
    items = [
        {"role": "user", "content": "order?"},
        {"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "think"}]},
        {"type": "function_call", "call_id": "c", "name": "lookup", "arguments": '{"id": 7}'},
        {"type": "function_call_output", "call_id": "c", "output": '{"ok": true}'},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
        {"type": "web_search_call", "id": "ws", "status": "completed"},
    ]
    found = transcript("session", {"items": items})
    assert found is not None
    roles = [(e.role, e.heading) for e in found.entries]
    assert roles == [
        ("user", "user"),
        ("reasoning", "reasoning"),
        ("assistant", "function call"),
        ("tool", "function output"),
        ("assistant", "assistant"),
        ("item", "web search call"),
    ]
    assert found.entries[1].content == "think"
    assert found.entries[2].calls[0].arguments == {"id": 7}
    assert found.entries[3].content == {"ok": True}
    assert found.entries[4].content == "ok"
    assert found.dangling() == []


def test_langchain_messages_are_decoded_or_left_as_placeholders() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()

    def wrap(value: Any) -> dict[str, Any]:
        type_, data = serde.dumps_typed(value)
        return {"$serde": [type_, base64.b64encode(data).decode()]}

    messages = [
        wrap(HumanMessage("weather?", id="m0")),
        wrap(AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "w"}, "id": "c1"}])),
        wrap(ToolMessage("sunny", tool_call_id="c1")),
        wrap(AIMessage("", tool_calls=[{"name": "book", "args": {}, "id": "c2"}])),
        {"$serde": ["msgpack", "not base64!"]},
        "plain JSON text",
    ]
    state = {"id": "ck", "checkpoint": {}, "values": {"messages": messages}}
    found = transcript("langgraph", state, Decoder())
    assert found is not None
    assert [e.role for e in found.entries][:4] == ["user", "assistant", "tool", "assistant"]
    assert found.entries[0].content == "weather?"
    assert found.entries[1].calls[0].name == "lookup"
    assert found.entries[2].answers == "c1"
    assert [c.name for _, _, c in found.dangling()] == ["book"]
    assert found.entries[4].undecoded is not None
    assert found.entries[4].undecoded.reason == "not base64"
    assert found.entries[5].content == "plain JSON text"
    tree = Decoder().tree(state)
    assert tree["values"]["messages"][0]["content"] == "weather?"


def test_without_langgraph_values_stay_undecoded(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentckpt.ops import serde

    monkeypatch.setattr(serde, "_load_serializer", lambda: None)
    decoder = Decoder()
    assert not decoder.available
    value = decoder.value({"$serde": ["msgpack", base64.b64encode(b"\x01\x02").decode()]})
    assert value == Undecoded("msgpack", 2, "LangGraph is not installed")
    assert decoder.tree({"x": {"$serde": ["msgpack", "AQI="]}}) == {
        "x": {"undecoded": "msgpack", "bytes": 2, "reason": "LangGraph is not installed"}
    }


def test_the_pending_turn_rule() -> None:
    roles = ["user", "assistant", "user", "assistant"]
    assert pending_start(roles, head_open=True, head_step=2) == 2
    assert pending_start(roles, head_open=False, head_step=2) is None
    assert pending_start(["assistant"], head_open=True, head_step=1) is None


def test_assess_a_conversation_cut_off_and_silent() -> None:
    state = {
        "conversation": [
            {"role": "user", "content": "email bob"},
            {"role": "assistant", "tool_calls": [{"tool_name": "send_email", "arguments": {}}]},
        ]
    }
    info = run("conversation", head_open=True, heartbeat_at=NOW - timedelta(minutes=10))
    found = assess(info, transcript("conversation", state), now=NOW, orphan_after=300, archived=4)
    names = [f.name for f in found.flags]
    assert names == ["open-turn", "pending-message", "orphan", "dangling-call"]
    assert "user message #4" in found.flags[1].text  # counted from the archived ones
    assert "10m" in found.flags[2].text
    assert any("replay it" in a for a in found.actions)
    assert any("'interrupted' error result" in a for a in found.actions)


def test_assess_runs_threads_and_finished_runs() -> None:
    expired = run(
        "run",
        lease_owner="w1",
        lease_epoch=3,
        lease_expires_at=NOW - timedelta(seconds=90),
    )
    found = assess(expired, None, now=NOW, orphan_after=300)
    assert [f.name for f in found.flags] == ["lease-expired"]
    assert "epoch 4" in found.actions[0]
    held = run("run", lease_owner="w1", lease_expires_at=NOW + timedelta(seconds=30))
    assert assess(held, None, now=NOW, orphan_after=300).flags == ()
    thread = run("langgraph")
    waiting = assess(thread, None, now=NOW, orphan_after=300, pending_channels=["__interrupt__"])
    assert [f.name for f in waiting.flags] == ["interrupt"]
    assert "Command(resume=...)" in waiting.actions[0]
    resumed = assess(
        thread, None, now=NOW, orphan_after=300, pending_channels=["__interrupt__", "__resume__"]
    )
    assert resumed.flags == ()
    done = assess(run("run", status="completed"), None, now=NOW, orphan_after=300)
    assert done.flags == ()
    assert "fork it" in done.actions[-1]
