"""The chat-message form of transcripts (``export --format transcript``), every layout."""

from __future__ import annotations

import json

from agentckpt.ops.transcripts import chat_messages, transcript


def chat(kind: str, state: object) -> tuple[list[dict[str, object]], int]:
    read = transcript(kind, state)
    assert read is not None
    return chat_messages(read.entries)


def test_openai_chat_messages_pass_through() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    out, skipped = chat("conversation", {"version": 2, "conversation": messages})
    assert skipped == 0
    assert out[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    ]
    assert out[3] == {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]


def test_agents_session_items_merge_calls_and_skip_reasoning() -> None:
    items = [
        {"role": "user", "content": "weather?"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        {
            "type": "function_call",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
            "call_id": "a",
        },
        {"type": "function_call", "name": "get_time", "arguments": "{}", "call_id": "b"},
        {"type": "function_call_output", "call_id": "a", "output": "cold"},
        {"type": "function_call_output", "call_id": "b", "output": "noon"},
    ]
    out, skipped = chat("session", {"items": items})
    assert skipped == 1
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool"]
    calls = out[1]["tool_calls"]
    assert isinstance(calls, list)
    assert [c["id"] for c in calls] == ["a", "b"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    assert out[2]["tool_call_id"] == "a"


def test_a_call_without_an_id_gets_one_its_inline_result_answers() -> None:
    messages = [
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"tool_name": "t", "arguments": {}, "result": [1]}],
        }
    ]
    out, _ = chat("conversation", {"version": 2, "conversation": messages})
    call_id = out[0]["tool_calls"][0]["id"]  # type: ignore[index]
    assert call_id == "call_0_0"
    assert out[1] == {"role": "tool", "tool_call_id": "call_0_0", "content": "[1]"}
