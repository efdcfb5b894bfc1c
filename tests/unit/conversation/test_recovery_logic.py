"""Recovery checks without a database: drift, pending turns, dangling tool calls."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt.conversation import (
    AgentConfig,
    ConfigDriftError,
    ConversationState,
    Message,
    Recovery,
    ToolCall,
    config_drift,
    interrupted_result,
)
from agentckpt.conversation.recovery import close_dangling, find_dangling, find_pending
from tests.support.conversation import CONFIG, TOOLS


def state(
    config: dict[str, Any] | None = None, tools: list[Any] | None = None
) -> ConversationState:
    return ConversationState(
        agent_config=AgentConfig.from_json(dict(config or CONFIG)),
        tool_registry=list(TOOLS if tools is None else tools),
    )


def test_the_same_runtime_has_no_drift() -> None:
    assert config_drift(state(), dict(CONFIG), list(TOOLS)) == []
    assert config_drift(state(), AgentConfig.from_json(dict(CONFIG)), reversed(TOOLS)) == []


def test_every_difference_is_listed() -> None:
    runtime = {
        "model": "llama-3-8b",
        "lora_adapters": ["router-lora-v1", "weather-lora-v2"],
        "temperature": 0.7,
        "max_tokens": 1024,
        "top_p": 0.9,
    }
    found = config_drift(state(), runtime, ["get_weather", "search_web", "run_code"])
    assert [(d.field, d.kind) for d in found] == [
        ("agent_config.model", "changed"),
        ("agent_config.lora_adapters", "changed"),
        ("agent_config.temperature", "changed"),
        ("agent_config.max_tokens", "changed"),
        ("agent_config.top_p", "added"),
        ("tool_registry.send_email", "missing"),
        ("tool_registry.run_code", "added"),
    ]
    assert found[0].stored == "llama-3-70b"
    assert found[0].runtime == "llama-3-8b"
    error = ConfigDriftError(__import__("uuid").uuid4(), found)
    assert error.differences == found
    for difference in found:
        assert str(difference) in str(error)


def test_a_config_key_the_runtime_lacks_is_drift() -> None:
    runtime = dict(CONFIG)
    del runtime["max_tokens"]
    assert [(d.field, d.kind, d.stored) for d in config_drift(state(), runtime, TOOLS)] == [
        (
            "agent_config.max_tokens",
            "missing",
            4096,
        )
    ]


def test_numbers_compare_by_value_but_bools_are_not_numbers() -> None:
    assert (
        config_drift(state({**CONFIG, "temperature": 1}), {**CONFIG, "temperature": 1.0}, TOOLS)
        == []
    )
    drift = config_drift(state({**CONFIG, "stream": 1}), {**CONFIG, "stream": True}, TOOLS)
    assert [d.field for d in drift] == ["agent_config.stream"]


def test_tool_objects_compare_by_name_then_content() -> None:
    stored = [{"name": "get_weather", "version": 1}, "search_web"]
    drift = config_drift(
        state(tools=stored), CONFIG, [{"name": "get_weather", "version": 2}, "search_web"]
    )
    assert [(d.field, d.kind) for d in drift] == [("tool_registry.get_weather", "changed")]


def conversation() -> list[Message]:
    done = ToolCall("get_weather", {"city": "Berlin"}, result={"t": 12})
    cut = ToolCall("send_email", {"to": "a@b"})
    return [
        Message("user", "weather?"),
        Message("assistant", "checking", tool_calls=[done]),
        Message("user", "mail it"),
        Message("assistant", "sending", tool_calls=[ToolCall("x", result=1), cut]),
    ]


def test_the_open_turn_starts_at_the_last_user_message() -> None:
    messages = conversation()
    pending = find_pending(messages, head_open=True, head_step=2)
    assert pending is not None
    assert (pending.turn, pending.start, pending.user_message.content) == (2, 2, "mail it")
    assert [m.content for m in pending.partial] == ["sending"]
    assert find_pending(messages, head_open=False, head_step=2) is None


def test_dangling_calls_are_found_and_closed_without_touching_the_original() -> None:
    messages = conversation()
    dangling = find_dangling(messages, pending_from=2)
    assert [(d.message_index, d.call_index, d.call.tool_name, d.pending) for d in dangling] == [
        (3, 1, "send_email", True)
    ]
    closed = close_dangling(messages, {(3, 1): interrupted_result(dangling[0].call)})
    assert not messages[3].tool_calls[1].has_result  # type: ignore[index]
    fixed = closed[3].tool_calls[1]  # type: ignore[index]
    assert fixed.result["error"] == "interrupted"
    assert "send_email" in fixed.result["message"]
    assert closed[0] is messages[0]  # untouched messages are shared


def test_replay_messages_end_with_the_pending_user_message() -> None:
    messages = conversation()
    pending = find_pending(messages, head_open=True, head_step=2)
    recovery = Recovery(
        conversation_id=__import__("uuid").uuid4(),
        agent_id="a",
        step=2,
        write_version=3,
        state_bytes=0,
        state=state(),
        messages=messages,
        model_messages=messages,
        pending=pending,
    )
    assert [m.content for m in recovery.replay_messages()] == ["weather?", "checking", "mail it"]
    assert recovery.tool_registry == TOOLS
    assert recovery.agent_config.model == "llama-3-70b"


@pytest.mark.parametrize("head_open", [True, False])
def test_no_pending_turn_without_a_user_message(head_open: bool) -> None:
    assert find_pending([Message("system", "be brief")], head_open=head_open, head_step=1) is None
