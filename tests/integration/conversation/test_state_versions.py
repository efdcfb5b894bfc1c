"""Stored version-1 states: upgraded when read, and rewritten in bulk by migrate_states."""

from __future__ import annotations

import copy
import inspect
from typing import Any

from agentckpt import Store
from agentckpt.conversation import state_migrations
from tests.support.conversation import CONFIG, dump, run_sql

V1: dict[str, Any] = {
    "conversation": [
        {"role": "user", "content": "weather?", "timestamp": "T0"},
        {
            "role": "assistant",
            "content": "12 degrees",
            "tool_calls": [
                {"tool_name": "get_weather", "arguments": {"city": "Berlin"}, "result": 12}
            ],
            "timestamp": "T1",
        },
    ],
    "agent_config": CONFIG,
    "metadata": {"user_id": "u"},
}
TOOLS_USED = ["get_weather"]


def v1_conversation(store: Any, *, open_turn: bool = False) -> Any:
    """A conversation written by the first format's code: no version, no tool registry."""
    run = store.create_run(agent_id="old", kind="conversation")
    store.commit(run.run_id, copy.deepcopy(V1))
    if open_turn:
        state = copy.deepcopy(V1)
        state["conversation"].append({"role": "user", "content": "and tomorrow?"})
        store.commit(run.run_id, state, keep_open=True)
    return run.run_id


def test_a_version_1_state_is_upgraded_when_read(make_conversations: Any) -> None:
    conversations = make_conversations()
    cid = v1_conversation(conversations.store)
    recovered = conversations.recover(cid, agent_config=CONFIG, tools=TOOLS_USED)
    assert recovered.upgraded_from == 1
    assert recovered.state.version == 2
    assert recovered.tool_registry == TOOLS_USED
    assert dump([m.to_json() for m in recovered.messages]) == dump(V1["conversation"])
    opened = conversations.open(cid, agent_config=CONFIG, tools=TOOLS_USED)
    opened.add_user_message("next", timestamp="T2")
    again = make_conversations().recover(cid, agent_config=CONFIG, tools=TOOLS_USED)
    assert again.upgraded_from is None  # the next write stored version 2


def test_migrate_states_upgrades_stored_states_in_batches(make_conversations: Any) -> None:
    conversations = make_conversations()
    store = conversations.store
    sealed = [v1_conversation(store) for _ in range(3)]
    pending = v1_conversation(store, open_turn=True)
    current = conversations.start(agent_id="new", agent_config=CONFIG, tools=TOOLS_USED)
    current.add_user_message("q", timestamp="T")
    current.add_assistant_message("a", timestamp="T")
    plain = store.create_run(agent_id="loop")
    store.commit(plain.run_id, {"not": "a conversation"})

    report = conversations.migrate_states(batch_size=2)
    assert (report.scanned, report.upgraded, report.already_current) == (4, 4, 0)
    assert report.conflicts == []
    assert report.failed == {}

    versions = run_sql(
        make_conversations.url,
        "SELECT s.step, s.is_open, s.state_version FROM runs r JOIN steps s "
        "ON s.run_id = r.run_id AND s.step = r.head_step WHERE r.run_id = ?",
        str(sealed[0]),
    )
    assert [(step, bool(is_open), v) for step, is_open, v in versions] == [(2, False, 2)]
    reader = make_conversations(store_options={"migrations": state_migrations()})
    upgraded = reader.store.latest(sealed[0]).state
    assert upgraded["version"] == 2
    assert upgraded["tool_registry"] == TOOLS_USED
    assert dump(upgraded["conversation"]) == dump(V1["conversation"])

    # An open turn is rewritten in place: still pending, same turn.
    recovered = reader.recover(pending, agent_config=CONFIG, tools=TOOLS_USED)
    assert recovered.upgraded_from is None
    assert recovered.pending is not None
    assert recovered.pending.turn == 2
    assert recovered.write_version == 2

    assert conversations.migrate_states().scanned == 0  # nothing left to do


def test_a_writer_moving_on_during_migration_is_a_reported_conflict(
    make_conversations: Any,
) -> None:
    conversations = make_conversations()
    cid = v1_conversation(conversations.store)
    store = conversations.store
    inner = getattr(store, "inner", store)
    original = inner.commit

    def interfere() -> None:
        # Another process writes the next turn after migrate_states read the head.
        with Store.connect(make_conversations.url) as other:
            state = copy.deepcopy(V1)
            state["conversation"].append({"role": "user", "content": "meanwhile"})
            other.commit(cid, state)

    if inspect.iscoroutinefunction(original):

        async def spy(*args: Any, **kwargs: Any) -> Any:
            interfere()
            return await original(*args, **kwargs)

    else:

        def spy(*args: Any, **kwargs: Any) -> Any:
            interfere()
            return original(*args, **kwargs)

    inner.commit = spy
    report = conversations.migrate_states()
    assert (report.scanned, report.upgraded, report.conflicts) == (1, 0, [cid])
    inner.commit = original
    report = conversations.migrate_states()
    assert (report.scanned, report.upgraded, report.conflicts) == (1, 1, [])
    recovered = conversations.recover(cid, agent_config=CONFIG, tools=TOOLS_USED)
    assert recovered.messages[-1].content == "meanwhile"
    assert recovered.step == 3


def test_a_state_that_cannot_be_upgraded_is_reported_as_failed(make_conversations: Any) -> None:
    conversations = make_conversations()
    run = conversations.store.create_run(agent_id="old", kind="conversation")
    conversations.store.commit(run.run_id, {"version": 1, "conversation": "not a list"})
    report = conversations.migrate_states()
    assert report.scanned == 1
    assert list(report.failed) == [run.run_id]
    assert "/conversation" in report.failed[run.run_id]
