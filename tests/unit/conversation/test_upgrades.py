"""State format version 1 (no tool registry) upgrades to version 2, without a database."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import StateVersionError
from agentckpt.conversation import CURRENT_VERSION, ConversationState, state_migrations
from tests.support.conversation import dump

V1: dict[str, Any] = {
    "conversation": [
        {"role": "user", "content": "weather and mail?", "timestamp": "T0"},
        {
            "role": "assistant",
            "content": "on it",
            "tool_calls": [
                {"tool_name": "get_weather", "arguments": {}, "result": 1},
                {"tool_name": "send_email", "arguments": {}, "result": 2},
                {"tool_name": "get_weather", "arguments": {}, "result": 3},
            ],
        },
    ],
    "agent_config": {"model": "llama-3-70b", "temperature": 0.3},
    "metadata": {"user_id": "u"},
    "custom": True,
}


def test_version_1_gains_the_tools_it_used_in_order_of_first_use() -> None:
    upgraded, changed = state_migrations().upgrade(dict(V1))
    assert changed
    assert upgraded["version"] == CURRENT_VERSION == 2
    assert upgraded["tool_registry"] == ["get_weather", "send_email"]
    assert list(upgraded) == [
        "version",
        "conversation",
        "agent_config",
        "tool_registry",
        "metadata",
        "custom",
    ]
    assert upgraded["conversation"] == V1["conversation"]
    state = ConversationState.from_json(upgraded)
    assert dump(state.to_json()) == dump(upgraded)


def test_an_explicit_version_1_and_no_config_upgrade_too() -> None:
    upgraded, _ = state_migrations().upgrade({"version": 1, "conversation": []})
    assert upgraded == {"version": 2, "conversation": [], "tool_registry": []}


def test_current_states_are_left_alone_and_newer_ones_refused() -> None:
    migrations = state_migrations()
    current = {"version": 2, "conversation": []}
    assert migrations.upgrade(current) == (current, False)
    with pytest.raises(StateVersionError, match="newer"):
        migrations.upgrade({"version": 3})
