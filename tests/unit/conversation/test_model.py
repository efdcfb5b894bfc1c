"""The state format as typed objects: exact round trips, extras kept, bad input refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt import InvalidValueError
from agentckpt._core.blobs import BlobRef
from agentckpt._core.codec import encode
from agentckpt.conversation import (
    AgentConfig,
    ConversationMetadata,
    ConversationState,
    Message,
    ResultNotLoadedError,
    ToolCall,
    tool_names,
)
from tests.support.conversation import dump

SEED_STATE: dict[str, Any] = {
    "version": 2,
    "conversation": [
        {
            "role": "user",
            "content": "What's the weather in Berlin?",
            "timestamp": "2025-03-15T10:00:00Z",
        },
        {
            "role": "assistant",
            "content": "Let me check the weather API.",
            "tool_calls": [
                {
                    "tool_name": "get_weather",
                    "arguments": {"city": "Berlin"},
                    "result": {"temperature": 12, "condition": "cloudy"},
                    "duration_ms": 340,
                }
            ],
            "timestamp": "2025-03-15T10:00:02Z",
        },
    ],
    "agent_config": {
        "model": "llama-3-70b",
        "lora_adapters": ["weather-lora-v2", "router-lora-v1"],
        "temperature": 0.3,
        "max_tokens": 4096,
    },
    "tool_registry": ["get_weather", "search_web", "send_email"],
    "metadata": {
        "user_id": "user_abc123",
        "session_id": "sess_xyz789",
        "input_tokens": 1523,
        "output_tokens": 421,
        "cost_estimate_usd": 0.023,
    },
}


def with_extras() -> dict[str, Any]:
    """The seed state with unknown keys at every level, some before known ones."""
    state = copy.deepcopy(SEED_STATE)
    state["trace_id"] = "t-1"
    state["conversation"][0] = {"name": "ada", **state["conversation"][0], "lang": "en"}
    call = state["conversation"][1]["tool_calls"][0]
    state["conversation"][1]["tool_calls"][0] = {"call_id": "c1", **call, "cached": False}
    state["conversation"][1]["reasoning"] = ["step 1", None]
    state["agent_config"]["top_p"] = 0.9
    state["agent_config"] = {"provider": "vllm", **state["agent_config"]}
    state["metadata"]["region"] = {"name": "eu", "zone": None}
    state["archive"] = {"messages": 0, "segments": 0, "note": "x"}
    return state


def test_seed_state_round_trips_exactly() -> None:
    state = ConversationState.from_json(SEED_STATE)
    assert dump(state.to_json()) == dump(SEED_STATE)
    assert state.agent_config.lora_adapters == ["weather-lora-v2", "router-lora-v1"]
    call = state.conversation[1].tool_calls[0]  # type: ignore[index]
    assert (call.tool_name, call.duration_ms, call.result) == (
        "get_weather",
        340,
        SEED_STATE["conversation"][1]["tool_calls"][0]["result"],
    )
    assert state.metadata.cost_estimate_usd == 0.023


def test_unknown_fields_are_kept_at_every_level_in_their_order() -> None:
    doc = with_extras()
    state = ConversationState.from_json(copy.deepcopy(doc))
    assert dump(state.to_json()) == dump(doc)
    assert state.extra == {"trace_id": "t-1"}
    assert state.conversation[0].extra == {"name": "ada", "lang": "en"}
    assert state.conversation[1].tool_calls[0].extra == {"call_id": "c1", "cached": False}  # type: ignore[index]
    assert state.agent_config.extra == {"provider": "vllm", "top_p": 0.9}
    assert state.metadata.extra == {"region": {"name": "eu", "zone": None}}
    assert state.archive is not None
    assert state.archive.extra == {"note": "x"}


def test_absent_fields_stay_absent_and_explicit_nulls_stay_null() -> None:
    doc = {
        "conversation": [{"role": "assistant", "content": None, "tool_calls": None}],
        "metadata": {"user_id": None},
    }
    state = ConversationState.from_json(doc)
    assert state.version == 1
    assert state.tool_registry is None
    assert dump(state.to_json()) == dump(doc)


def test_a_dangling_call_differs_from_a_null_result() -> None:
    running = ToolCall.from_json({"tool_name": "t", "arguments": {}})
    returned_null = ToolCall.from_json({"tool_name": "t", "arguments": {}, "result": None})
    assert not running.has_result
    assert running.result is None
    assert returned_null.has_result
    assert returned_null.result is None
    assert "result" not in running.to_json()
    assert returned_null.to_json()["result"] is None
    assert running != returned_null


def test_new_objects_are_written_in_the_seed_order() -> None:
    call = ToolCall("get_weather", {"city": "Berlin"}, result={"t": 12}, duration_ms=340)
    message = Message("assistant", "ok", timestamp="T", tool_calls=[call])
    state = ConversationState(
        conversation=[message],
        agent_config=AgentConfig("m", lora_adapters=["a"], temperature=0.3, max_tokens=5),
        tool_registry=["get_weather"],
        metadata=ConversationMetadata(user_id="u"),
    )
    doc = state.to_json()
    assert list(doc) == ["version", "conversation", "agent_config", "tool_registry", "metadata"]
    assert list(doc["conversation"][0]) == ["role", "content", "tool_calls", "timestamp"]
    assert list(doc["conversation"][0]["tool_calls"][0]) == [
        "tool_name",
        "arguments",
        "result",
        "duration_ms",
    ]
    assert doc["version"] == 2
    assert doc["agent_config"] == {
        "model": "m",
        "lora_adapters": ["a"],
        "temperature": 0.3,
        "max_tokens": 5,
    }


def test_fields_set_after_reading_are_appended() -> None:
    state = ConversationState.from_json({"version": 2, "conversation": [], "x": 1})
    state.tool_registry = ["a"]
    assert list(state.to_json()) == ["version", "conversation", "x", "tool_registry"]


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ([], ""),
        ({"conversation": {}}, "/conversation"),
        ({"conversation": [{"content": "no role"}]}, "/conversation/0/role"),
        ({"conversation": [{"role": "user", "timestamp": 5}]}, "/conversation/0/timestamp"),
        (
            {"conversation": [{"role": "assistant", "tool_calls": [{"arguments": {}}]}]},
            "/conversation/0/tool_calls/0/tool_name",
        ),
        (
            {
                "conversation": [
                    {"role": "a", "tool_calls": [{"tool_name": "t", "duration_ms": "1"}]}
                ]
            },
            "/conversation/0/tool_calls/0/duration_ms",
        ),
        ({"agent_config": {"temperature": "hot"}}, "/agent_config/temperature"),
        ({"agent_config": {"max_tokens": True}}, "/agent_config/max_tokens"),
        ({"agent_config": {"lora_adapters": "a"}}, "/agent_config/lora_adapters"),
        ({"metadata": {"input_tokens": 1.5}}, "/metadata/input_tokens"),
        ({"tool_registry": "get_weather"}, "/tool_registry"),
        ({"archive": {"messages": -1, "segments": 0}}, "/archive/messages"),
        ({"version": "2"}, "/version"),
    ],
)
def test_bad_documents_are_refused_with_their_path(doc: Any, path: str) -> None:
    with pytest.raises(InvalidValueError) as info:
        ConversationState.from_json(doc)
    assert info.value.path == path


def test_extras_that_shadow_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("user", "hi", extra={"role": "assistant"})


def test_blob_results_load_lazily_once_and_only_with_a_loader() -> None:
    data = encode({"rows": list(range(100))})
    ref = BlobRef(digest="ab" * 32, size=len(data), codec="zstd", uri="db:sha256:" + "ab" * 32)
    doc = {"tool_name": "q", "arguments": {}, "result": ref.to_json()}
    call = ToolCall.from_json(doc)
    assert call.result_ref == ref
    assert not call.is_loaded
    with pytest.raises(ResultNotLoadedError, match="load_result"):
        _ = call.result
    fetched: list[BlobRef] = []

    def loader(wanted: BlobRef) -> bytes:
        fetched.append(wanted)
        return data

    call.attach_loader(loader)
    assert call.result == {"rows": list(range(100))}
    assert call.result == {"rows": list(range(100))}
    assert fetched == [ref]
    assert call.to_json() == doc  # the state keeps the reference


def test_copies_are_independent() -> None:
    message = Message.from_json(SEED_STATE["conversation"][1])
    twin = message.copy()
    twin.tool_calls[0].set_result("changed")  # type: ignore[index]
    twin.content = "other"
    assert message.to_json() == SEED_STATE["conversation"][1]
    state = ConversationState.from_json(copy.deepcopy(SEED_STATE))
    clone = state.copy(conversation=[])
    clone.metadata.add_usage(input_tokens=1)
    assert state.metadata.input_tokens == 1523
    assert clone.metadata.input_tokens == 1524
    assert clone.conversation == []
    assert len(state.conversation) == 2


def test_usage_adds_up_from_nothing() -> None:
    meta = ConversationMetadata()
    meta.add_usage(input_tokens=3, output_tokens=2, cost_usd=0.5)
    meta.add_usage(input_tokens=4)
    assert meta.to_json() == {"input_tokens": 7, "output_tokens": 2, "cost_estimate_usd": 0.5}


def test_tool_names_accepts_names_and_objects() -> None:
    assert tool_names(["a", {"name": "b", "version": 2}, 3]) == ["a", "b", "3"]


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
extras = st.dictionaries(
    st.text(min_size=1, max_size=6).map(lambda k: "x_" + k), json_values, max_size=3
)


@settings(max_examples=150, deadline=None)
@given(
    state_extra=extras,
    message_extra=extras,
    call_extra=extras,
    config_extra=extras,
    meta_extra=extras,
    front=st.booleans(),
)
def test_any_extras_round_trip(
    state_extra: dict[str, Any],
    message_extra: dict[str, Any],
    call_extra: dict[str, Any],
    config_extra: dict[str, Any],
    meta_extra: dict[str, Any],
    front: bool,
) -> None:
    def mix(known: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        return {**extra, **known} if front else {**known, **extra}

    doc = copy.deepcopy(SEED_STATE)
    assistant = doc["conversation"][1]
    assistant["tool_calls"][0] = mix(assistant["tool_calls"][0], call_extra)
    doc["conversation"][1] = mix(assistant, message_extra)
    doc["agent_config"] = mix(doc["agent_config"], config_extra)
    doc["metadata"] = mix(doc["metadata"], meta_extra)
    doc = mix(doc, state_extra)
    assert dump(ConversationState.from_json(copy.deepcopy(doc)).to_json()) == dump(doc)
