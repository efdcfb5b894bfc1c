"""Turns on SQLite and PostgreSQL, sync and async: what is durable when, and how often.

Durability is checked from a second store (a fresh connection with no cache), which is
what a new process would see.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import InvalidValueError, StaleHeadError, StepConflictError
from agentckpt.conversation import Message, ToolCall, TurnError, state_migrations
from tests.support.conversation import CONFIG, METADATA, TOOLS, FakeClock, dump, dumps, step_rows
from tests.support.dbsql import run_sql


def start(conversations: Any) -> Any:
    return conversations.start(
        agent_id="weather-agent", agent_config=CONFIG, tools=TOOLS, metadata=METADATA
    )


def recover(make_conversations: Any, conversation_id: Any) -> Any:
    """Read the conversation through a brand-new store, as a new process would."""
    return make_conversations().recover(conversation_id, agent_config=CONFIG, tools=TOOLS)


def test_starting_writes_a_heartbeat_record_before_the_first_turn(
    make_conversations: Any,
) -> None:
    conv = start(make_conversations())
    run = run_sql(
        make_conversations.url,
        "SELECT kind, agent_id, status, head_step FROM runs WHERE run_id = ?",
        str(conv.conversation_id),
    )
    assert run == [("conversation", "weather-agent", "active", None)]
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.step is None
    assert recovered.messages == []
    assert recovered.pending is None
    assert recovered.agent_config.to_json() == CONFIG
    assert recovered.tool_registry == TOOLS
    assert recovered.state.metadata.to_json() == METADATA


def test_the_user_message_is_durable_before_the_model_is_called(
    make_conversations: Any,
) -> None:
    conv = start(make_conversations())
    info = conv.add_user_message("What's the weather in Berlin?", timestamp="T0")
    assert (info.step, info.is_open, info.write_version) == (1, True, 1)
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.pending is not None
    assert recovered.pending.turn == 1
    assert recovered.pending.user_message.content == "What's the weather in Berlin?"
    assert recovered.pending.partial == []


def test_a_whole_turn_is_two_writes_of_one_step(make_conversations: Any) -> None:
    conv = start(make_conversations())
    for turn in range(1, 4):
        conv.add_user_message(f"question {turn}", timestamp=f"T{turn}")
        call = ToolCall("get_weather", {"city": "Berlin"}, result={"t": turn}, duration_ms=3)
        info = conv.add_assistant_message(f"answer {turn}", tool_calls=[call], timestamp="A")
        assert (info.step, info.is_open, info.write_version) == (turn, False, 2)
    assert step_rows(make_conversations.url, conv.conversation_id) == [
        (1, False, 2),
        (2, False, 2),
        (3, False, 2),
    ]
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.pending is None
    assert recovered.step == 3
    assert dumps(recovered.messages) == dumps(conv.messages)
    assert [m.content for m in recovered.messages][-2:] == ["question 3", "answer 3"]


def test_later_turns_are_stored_as_small_deltas(make_conversations: Any) -> None:
    conv = start(make_conversations())
    conv.add_user_message("x" * 3000, timestamp="T")
    conv.add_assistant_message("y" * 3000, timestamp="T")
    conv.add_user_message("short", timestamp="T")
    info = conv.add_assistant_message("reply", timestamp="T")
    assert info.kind == "delta"
    assert info.raw_bytes < 400 < 6000 < info.state_bytes


def test_streaming_is_coalesced_and_a_finished_tool_call_is_written_at_once(
    make_conversations: Any, clock: FakeClock
) -> None:
    conv = start(make_conversations())
    conv.add_user_message("weather?", timestamp="T0")
    assert conv.stream("Let me ") is False  # within 500 ms of the user message's write
    clock.advance(0.2)
    assert conv.stream("check ") is False
    clock.advance(0.3)
    assert conv.stream("the weather API.") is True  # 500 ms since the last write
    assert step_rows(make_conversations.url, conv.conversation_id) == [(1, True, 2)]
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.pending.partial[0].content == "Let me check the weather API."

    call = conv.start_tool_call("get_weather", {"city": "Berlin"})
    assert conv.dirty
    info = conv.finish_tool_call(call, {"temperature": 12}, duration_ms=340)
    assert (info.write_version, conv.dirty) == (3, False)  # no clock advance needed

    conv.end_reply()
    clock.advance(0.1)
    assert conv.stream("It is 12 degrees.") is False
    partial = recover(make_conversations, conv.conversation_id).pending.partial
    assert [m.content for m in partial] == ["Let me check the weather API."]  # not flushed

    info = conv.complete_turn(input_tokens=10, output_tokens=5, cost_usd=0.01)
    assert (info.step, info.is_open, info.write_version) == (1, False, 4)
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.pending is None
    assert [m.content for m in recovered.messages] == [
        "weather?",
        "Let me check the weather API.",
        "It is 12 degrees.",
    ]
    assert recovered.messages[1].tool_calls[0].result == {"temperature": 12}
    assert recovered.state.metadata.to_json() == {
        **METADATA,
        "input_tokens": 10,
        "output_tokens": 5,
        "cost_estimate_usd": 0.01,
    }


def test_flush_if_due_bounds_the_risk_when_no_tokens_arrive(
    make_conversations: Any, clock: FakeClock
) -> None:
    conv = start(make_conversations(options=_options(flush_interval=2.0)))
    conv.add_user_message("q", timestamp="T")
    conv.stream("partial")
    clock.advance(1.9)
    assert conv.flush_if_due() is False
    clock.advance(0.1)
    assert conv.flush_if_due() is True
    assert conv.flush_if_due() is False  # nothing new
    assert recover(make_conversations, conv.conversation_id).pending.partial[0].content == (
        "partial"
    )


def _options(**values: Any) -> Any:
    from agentckpt.conversation import ConversationOptions

    return ConversationOptions(**values)


def test_the_run_metadata_rolls_up_usage_for_sql(make_conversations: Any) -> None:
    conv = start(make_conversations())
    conv.add_user_message("q", timestamp="T")
    conv.add_assistant_message("a", timestamp="T", input_tokens=7, output_tokens=3)
    conv.add_user_message("q", timestamp="T")
    conv.add_assistant_message("a", timestamp="T", input_tokens=1, output_tokens=1)
    run = make_conversations().store.get_run(conv.conversation_id)
    assert run.metadata == {**METADATA, "input_tokens": 8, "output_tokens": 4}


def test_a_second_writer_gets_a_typed_conflict(make_conversations: Any) -> None:
    conv = start(make_conversations())
    conv.add_user_message("q1", timestamp="T")
    conv.add_assistant_message("a1", timestamp="T")
    other = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    other.add_user_message("from the other process", timestamp="T")
    with pytest.raises(StaleHeadError):
        conv.add_user_message("q2", timestamp="T")
    # Both write the open turn: the one that read an older version is refused.
    mine = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    other.stream("other text")
    other.flush()
    mine.stream("my text")
    with pytest.raises(StaleHeadError):
        mine.flush()
    with pytest.raises(StaleHeadError, match="open it again"):
        mine.flush()  # a retry must not write over the other writer's turn
    assert step_rows(make_conversations.url, conv.conversation_id)[-1] == (2, True, 2)


def test_two_writers_of_the_same_message_both_count(make_conversations: Any) -> None:
    """Two handles that read the same head and write the same user message: the second
    is refused (StaleHeadError), not taken for a retry of the first, so reopening and
    writing it again keeps both messages (issue 12)."""
    conv = start(make_conversations())
    conv.add_user_message("q1", timestamp="T")
    conv.add_assistant_message("a1", timestamp="T")
    other = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    other.add_user_message("same", timestamp="T")
    with pytest.raises(StaleHeadError):
        conv.add_user_message("same", timestamp="T")
    other.add_assistant_message("first answer", timestamp="T")
    again = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    again.add_user_message("same", timestamp="T")
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert [m.content for m in final.messages][-3:] == ["same", "first answer", "same"]


def test_a_newer_handle_supersedes_an_older_one_of_the_same_api(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    conv.add_user_message("q", timestamp="T")
    newer = conversations.open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    conv.stream("old")
    with pytest.raises(StaleHeadError, match="superseded"):
        conv.flush()
    newer.stream("new")
    assert newer.flush().write_version == 2


def test_retrying_a_completed_turn_is_a_no_op_and_other_content_conflicts(
    make_conversations: Any,
) -> None:
    # The plain store API reads conversations when it knows their format versions.
    conversations = make_conversations(store_options={"migrations": state_migrations()})
    conv = start(conversations)
    conv.add_user_message("q", timestamp="T")
    sealed = conv.add_assistant_message("a", timestamp="T")
    store = conversations.store
    document = store.latest(conv.conversation_id).state
    again = store.commit(conv.conversation_id, document, step=1)
    assert (again.step, again.write_version, again.checksum) == (1, 2, sealed.checksum)
    document["conversation"][1]["content"] = "changed"
    with pytest.raises(StepConflictError):
        store.commit(conv.conversation_id, document, step=1)


def test_turn_misuse_is_a_typed_error(make_conversations: Any) -> None:
    conv = start(make_conversations())
    with pytest.raises(TurnError, match="no turn is open"):
        conv.stream("x")
    with pytest.raises(TurnError, match="no turn is open"):
        conv.complete_turn()
    assert conv.flush() is None
    conv.add_user_message("q", timestamp="T")
    with pytest.raises(TurnError, match="still open"):
        conv.add_user_message("again", timestamp="T")
    with pytest.raises(TurnError, match="add_user_message"):
        conv.add_message(Message("user", "sneaky"))
    with pytest.raises(TurnError, match="open"):
        conv.end()


def test_a_turn_cannot_complete_with_a_call_that_has_no_result(make_conversations: Any) -> None:
    conv = start(make_conversations())
    conv.add_user_message("q", timestamp="T")
    conv.stream("calling")
    conv.start_tool_call("send_email", {"to": "a@b"})
    with pytest.raises(InvalidValueError) as info:
        conv.complete_turn()
    assert info.value.path == "/conversation/1/tool_calls/0"
    assert conv.turn_open


def test_unknown_fields_survive_the_api_and_recovery(make_conversations: Any) -> None:
    config = {**CONFIG, "top_p": 0.9, "provider": {"name": "vllm"}}
    metadata = {**METADATA, "region": "eu"}
    conv = make_conversations().start(
        agent_id="a", agent_config=config, tools=TOOLS, metadata=metadata
    )
    conv.add_user_message("q", timestamp="T", extra={"lang": "de"})
    call = ToolCall("get_weather", {"city": "Berlin"}, result=1, extra={"call_id": "c-1"})
    conv.add_assistant_message("a", tool_calls=[call], timestamp="T", extra={"reasoning": "r"})
    recovered = make_conversations().recover(conv.conversation_id, agent_config=config, tools=TOOLS)
    assert recovered.messages[0].extra == {"lang": "de"}
    assert recovered.messages[1].extra == {"reasoning": "r"}
    assert recovered.messages[1].tool_calls[0].extra == {"call_id": "c-1"}
    assert dump(recovered.agent_config.to_json()) == dump(config)
    assert recovered.state.metadata.extra == {"region": "eu"}


def test_open_or_start(make_conversations: Any) -> None:
    import uuid

    cid = uuid.uuid4()
    conversations = make_conversations()
    first = conversations.open_or_start(cid, agent_id="a", agent_config=CONFIG, tools=TOOLS)
    first.add_user_message("q", timestamp="T")
    again = make_conversations().open_or_start(
        str(cid), agent_id="a", agent_config=CONFIG, tools=TOOLS
    )
    assert again.conversation_id == cid
    assert again.turn_open
    assert again.turn == 1
    with pytest.raises(StepConflictError):
        conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS, conversation_id=cid)


def test_ending_a_conversation(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    conv.add_user_message("q", timestamp="T")
    conv.add_assistant_message("a", timestamp="T")
    conv.end()
    assert conversations.store.get_run(conv.conversation_id).status == "completed"
