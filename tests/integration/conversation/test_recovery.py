"""Recovery on both backends: config drift, pending turns, dangling tool calls."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import RunNotFoundError
from agentckpt.conversation import ConfigDriftError, ToolCall
from tests.support.conversation import CONFIG, TOOLS, FakeClock, dump, dumps


def started(conversations: Any) -> Any:
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("weather?", timestamp="T1")
    call = ToolCall("get_weather", {"city": "Berlin"}, result={"t": 12}, duration_ms=5)
    conv.add_assistant_message("12 degrees", tool_calls=[call], timestamp="T2")
    return conv


def cut_off_mid_tool_call(conversations: Any, clock: FakeClock) -> Any:
    """A conversation whose second turn died while send_email ran (flushed before)."""
    conv = started(conversations)
    conv.add_user_message("mail it to Bob", timestamp="T3")
    conv.stream("Sending ")
    done = conv.start_tool_call("lookup", {"name": "Bob"})
    conv.finish_tool_call(done, {"email": "bob@example.com"}, duration_ms=2)
    conv.start_tool_call("send_email", {"to": "bob@example.com"})
    clock.advance(1)
    assert conv.flush_if_due()  # the call is durable, its result never will be
    return conv


def test_every_drift_is_reported_at_once(make_conversations: Any) -> None:
    conv = started(make_conversations())
    runtime = {**CONFIG, "model": "llama-3-8b", "temperature": 0.9, "lora_adapters": []}
    with pytest.raises(ConfigDriftError) as info:
        make_conversations().recover(
            conv.conversation_id, agent_config=runtime, tools=["get_weather", "run_code"]
        )
    fields = [(d.field, d.kind) for d in info.value.differences]
    assert fields == [
        ("agent_config.model", "changed"),
        ("agent_config.lora_adapters", "changed"),
        ("agent_config.temperature", "changed"),
        ("tool_registry.search_web", "missing"),
        ("tool_registry.send_email", "missing"),
        ("tool_registry.run_code", "added"),
    ]
    assert "llama-3-8b" in str(info.value)
    assert "send_email" in str(info.value)
    with pytest.raises(ConfigDriftError):
        make_conversations().open(conv.conversation_id, agent_config=runtime, tools=TOOLS)


def test_accepted_drift_is_reported_and_recorded_with_the_next_write(
    make_conversations: Any,
) -> None:
    conv = started(make_conversations())
    runtime = {**CONFIG, "temperature": 0.9}
    tools = [*TOOLS, "run_code"]
    recovered = make_conversations().recover(
        conv.conversation_id, agent_config=runtime, tools=tools, accept_drift=True
    )
    assert [d.field for d in recovered.differences] == [
        "agent_config.temperature",
        "tool_registry.run_code",
    ]
    assert recovered.agent_config.temperature == 0.3  # what the checkpoint says
    opened = make_conversations().open(
        conv.conversation_id, agent_config=runtime, tools=tools, accept_drift=True
    )
    opened.add_user_message("again", timestamp="T9")
    later = make_conversations().recover(conv.conversation_id, agent_config=runtime, tools=tools)
    assert later.differences == []
    assert later.agent_config.temperature == 0.9


def test_recovering_an_unknown_or_non_conversation_run_is_not_found(
    make_conversations: Any,
) -> None:
    conversations = make_conversations()
    with pytest.raises(RunNotFoundError):
        conversations.recover(
            "00000000-0000-0000-0000-000000000001", agent_config=CONFIG, tools=TOOLS
        )
    run = conversations.store.create_run(agent_id="loop")
    with pytest.raises(RunNotFoundError, match="not a conversation"):
        conversations.recover(run.run_id, agent_config=CONFIG, tools=TOOLS)


def test_a_cut_off_turn_is_pending_and_its_dangling_call_is_closed(
    make_conversations: Any, clock: FakeClock
) -> None:
    conv = cut_off_mid_tool_call(make_conversations(), clock)
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert dumps(recovered.messages) == dumps(conv.messages)  # exactly as stored
    pending = recovered.pending
    assert pending is not None
    assert pending.turn == 2
    assert pending.start == 2
    assert pending.user_message.content == "mail it to Bob"
    assert [m.content for m in pending.partial] == ["Sending "]
    assert [
        (d.message_index, d.call_index, d.call.tool_name, d.pending) for d in recovered.dangling
    ] == [(3, 1, "send_email", True)]
    closed = recovered.model_messages[3].tool_calls[1]
    assert closed.result["error"] == "interrupted"
    assert not recovered.messages[3].tool_calls[1].has_result
    assert all(c.has_result for m in recovered.model_messages for c in m.tool_calls or ())
    assert [m.content for m in recovered.replay_messages()] == [
        "weather?",
        "12 degrees",
        "mail it to Bob",
    ]


def test_a_rerun_function_can_supply_the_results(make_conversations: Any, clock: FakeClock) -> None:
    conv = cut_off_mid_tool_call(make_conversations(), clock)
    seen: list[Any] = []

    def rerun(call: ToolCall) -> Any:
        seen.append((call.tool_name, call.arguments))
        return {"sent": True}

    recovered = make_conversations().recover(
        conv.conversation_id, agent_config=CONFIG, tools=TOOLS, rerun=rerun
    )
    assert seen == [("send_email", {"to": "bob@example.com"})]
    assert recovered.model_messages[3].tool_calls[1].result == {"sent": True}


def test_opening_continues_the_pending_turn_and_persists_the_repair(
    make_conversations: Any, clock: FakeClock
) -> None:
    conv = cut_off_mid_tool_call(make_conversations(), clock)
    opened = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert opened.turn_open
    assert opened.turn == 2
    assert opened.recovery.pending.turn == 2
    opened.stream("Done: the mail may or may not have gone out.")
    info = opened.complete_turn()
    assert (info.step, info.is_open) == (2, False)
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert final.pending is None
    assert final.dangling == []
    assert final.messages[3].tool_calls[1].result["error"] == "interrupted"
    assert final.messages[3].tool_calls[0].result == {"email": "bob@example.com"}
    assert final.messages[-1].content == "Done: the mail may or may not have gone out."


def test_opening_can_replay_the_pending_turn_from_its_user_message(
    make_conversations: Any, clock: FakeClock
) -> None:
    conv = cut_off_mid_tool_call(make_conversations(), clock)
    opened = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    dropped = opened.discard_partial()
    assert [m.content for m in dropped] == ["Sending "]
    assert opened.messages[-1].content == "mail it to Bob"
    info = opened.add_assistant_message("Sent.", timestamp="T4")
    assert (info.step, info.is_open) == (2, False)
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert [m.content for m in final.messages] == [
        "weather?",
        "12 degrees",
        "mail it to Bob",
        "Sent.",
    ]
    assert final.dangling == []


def test_a_recovered_conversation_goes_on_exactly(make_conversations: Any) -> None:
    conv = started(make_conversations())
    opened = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert not opened.turn_open
    assert opened.turn == 1
    opened.add_user_message("and tomorrow?", timestamp="T5")
    opened.add_assistant_message("rain", timestamp="T6")
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert dumps(final.messages) == dumps(conv.messages + opened.messages[2:])
    assert final.step == 2
    assert dump(final.agent_config.to_json()) == dump(CONFIG)
