"""How many commits a turn costs and how many queries reading one back costs, on SQLite
and PostgreSQL, sync and async.

Commits are counted on the store itself (every ``Store.commit`` that returned) and in the
database (``write_version`` of the step); the clock is moved past the flush interval
before each completion, so a coalesced flush that was due would show as a second commit.
"""

from __future__ import annotations

from typing import Any

from agentckpt import SnapshotPolicy
from agentckpt.conversation import ToolCall
from tests.integration.conversation.conftest import spy_commits, spy_reads
from tests.support.conversation import CONFIG, TOOLS, FakeClock, dumps, step_rows
from tests.support.dbsql import run_sql


def start(conversations: Any) -> Any:
    return conversations.start(agent_id="weather-agent", agent_config=CONFIG, tools=TOOLS)


def recover(make_conversations: Any, conversation_id: Any) -> Any:
    return make_conversations().recover(conversation_id, agent_config=CONFIG, tools=TOOLS)


def test_a_plain_turn_is_the_user_message_then_one_commit(
    make_conversations: Any, clock: FakeClock
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    commits = spy_commits(conversations)
    conv.add_user_message("What's the weather in Berlin?", timestamp="T0")
    assert [(c.step, c.is_open) for c in commits] == [(1, True)]
    clock.advance(2.0)  # the model took longer than the flush interval
    info = conv.add_assistant_message("12 degrees.", timestamp="T1", input_tokens=5)
    assert [(c.step, c.is_open, c.write_version) for c in commits] == [(1, True, 1), (1, False, 2)]
    assert info == commits[-1]
    assert step_rows(make_conversations.url, conv.conversation_id) == [(1, False, 2)]
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.pending is None
    assert dumps(recovered.messages) == dumps(conv.messages)
    assert recovered.state.metadata.input_tokens == 5


def test_a_streamed_turn_completes_its_pending_flush_in_the_sealing_commit(
    make_conversations: Any, clock: FakeClock
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    conv.add_user_message("q", timestamp="T0")
    commits = spy_commits(conversations)
    clock.advance(0.6)
    assert conv.stream("flushed ") is True  # a streaming flush: it stays
    conv.stream("pending")
    assert conv.dirty
    clock.advance(2.0)  # the pending flush is due now
    conv.complete_turn(output_tokens=3)
    assert [(c.is_open, c.write_version) for c in commits] == [(True, 2), (False, 3)]
    # add_assistant_message after buffered text: the same, one commit for the rest.
    conv.add_user_message("q2", timestamp="T2")
    conv.stream("pending again")
    clock.advance(2.0)
    del commits[:]
    conv.add_assistant_message("and a whole message", timestamp="T3")
    assert [(c.step, c.is_open, c.write_version) for c in commits] == [(2, False, 2)]
    recovered = recover(make_conversations, conv.conversation_id)
    assert [m.content for m in recovered.messages] == [
        "q",
        "flushed pending",
        "q2",
        "pending again",
        "and a whole message",
    ]
    assert recovered.pending is None


def test_a_turn_with_tool_calls_completes_in_one_commit(
    make_conversations: Any, clock: FakeClock
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    commits = spy_commits(conversations)
    conv.add_user_message("q", timestamp="T0")
    clock.advance(2.0)
    calls = [
        ToolCall("get_weather", {"city": "Berlin"}, result={"t": 12}, duration_ms=3),
        ToolCall("search_web", {"q": "Berlin"}, result=["a", "b"], duration_ms=9),
    ]
    conv.add_assistant_message("It is 12 degrees.", tool_calls=calls, timestamp="T1")
    assert [(c.is_open, c.write_version) for c in commits] == [(True, 1), (False, 2)]
    # Tool calls run through the handle: each finished call is written at once (on
    # purpose), and the completion after it is one more commit, not two.
    conv.add_user_message("q2", timestamp="T2")
    call = conv.start_tool_call("get_weather", {"city": "Paris"})
    clock.advance(0.1)
    conv.finish_tool_call(call, {"t": 15}, duration_ms=4)
    conv.stream("Paris: 15 degrees.")
    clock.advance(2.0)
    del commits[:]
    conv.complete_turn()
    assert [(c.step, c.is_open, c.write_version) for c in commits] == [(2, False, 3)]
    recovered = recover(make_conversations, conv.conversation_id)
    assert recovered.messages[1].tool_calls[1].result == ["a", "b"]
    assert recovered.messages[3].tool_calls[0].result == {"t": 15}
    assert recovered.messages[3].content == "Paris: 15 degrees."


def test_a_turn_with_a_blob_result_completes_in_one_commit(
    make_conversations: Any, clock: FakeClock
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    conv.add_user_message("q", timestamp="T0")
    commits = spy_commits(conversations)
    clock.advance(2.0)
    big = {"rows": [{"id": i, "text": "row " * 20} for i in range(200)]}
    call = ToolCall("search_web", {"q": "rows"}, result=big, duration_ms=40)
    conv.add_assistant_message("found 200 rows", tool_calls=[call], timestamp="T1")
    assert [(c.is_open, c.write_version) for c in commits] == [(False, 2)]
    assert call.result_ref is not None
    blobs = run_sql(
        make_conversations.url,
        "SELECT digest FROM blobs WHERE run_id = ?",
        str(conv.conversation_id),
    )
    assert blobs == [(call.result_ref.digest,)]
    recovered = recover(make_conversations, conv.conversation_id)
    stored = recovered.messages[1].tool_calls[0]
    assert stored.result_ref == call.result_ref
    assert make_conversations().load_result(conv.conversation_id, stored) == big


def test_recover_and_open_read_the_run_and_its_state_in_one_query(
    make_conversations: Any, clock: FakeClock
) -> None:
    writer = make_conversations()
    conv = start(writer)
    fresh = make_conversations()
    reads = spy_reads(fresh)
    recovered = fresh.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert reads == ["resume_run"]  # a run with no turn yet: its record only
    assert recovered.step is None
    for turn in range(25):  # past a snapshot interval: a chain of a snapshot and deltas
        conv.add_user_message(f"q{turn}", timestamp="T")
        conv.add_assistant_message(f"a{turn}", timestamp="T")
    conv.add_user_message("pending", timestamp="T")
    del reads[:]
    recovered = fresh.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert reads == ["resume_run"]
    assert dumps(recovered.messages) == dumps(conv.messages)
    assert recovered.pending is not None
    del reads[:]
    opened = fresh.open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert reads == ["resume_run"]
    assert opened.turn == 26
    assert opened.turn_open
    opened.add_assistant_message("done", timestamp="T")
    assert recover(make_conversations, conv.conversation_id).messages[-1].content == "done"


def test_open_continues_from_the_recovered_objects_without_copying_them(
    make_conversations: Any,
) -> None:
    conv = start(make_conversations())
    conv.add_user_message("q", timestamp="T")
    conv.add_assistant_message("a", timestamp="T")
    conv.add_user_message("q2", timestamp="T")
    conv.start_tool_call("send_email", {"to": "bob"})  # dangling once recovered
    conv.flush()
    opened = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    recovery = opened.recovery
    # The messages as read are the handle's, except the one whose dangling call recovery
    # closed (a repaired copy); the state record itself is the handle's own.
    assert all(m is r for m, r in zip(opened.messages[:3], recovery.messages[:3], strict=True))
    assert opened.messages[3] is not recovery.messages[3]
    assert opened.messages[3].tool_calls[0].result["error"] == "interrupted"
    assert not recovery.messages[3].tool_calls[0].has_result
    assert opened.state is not recovery.state
    opened.complete_turn(input_tokens=7)
    assert recovery.state.metadata.input_tokens is None  # the checkpoint's, unchanged
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert dumps(final.messages) == dumps(opened.messages)


def test_a_turn_due_a_snapshot_is_written_open_as_a_delta_and_sealed_as_the_snapshot(
    make_conversations: Any,
) -> None:
    policy = SnapshotPolicy(interval=3, prune=False)
    conversations = make_conversations(store_options={"policy": policy})
    conv = start(conversations)
    kinds = []
    for turn in range(7):
        opened = conv.add_user_message(f"q{turn}", timestamp="T")
        sealed = conv.add_assistant_message(f"a{turn}", timestamp="T")
        kinds.append((opened.kind, sealed.kind))
    # The first step is a snapshot from its first write (the run has none yet); after it
    # every third step is, and the open version that the seal replaces stays a delta.
    assert kinds == [
        ("snapshot", "snapshot"),
        ("delta", "delta"),
        ("delta", "delta"),
        ("delta", "snapshot"),
        ("delta", "delta"),
        ("delta", "delta"),
        ("delta", "snapshot"),
    ]
    stored = [info.kind for info in conversations.store.steps(conv.conversation_id)]
    assert stored == [sealed for _, sealed in kinds]
    recovered = recover(make_conversations, conv.conversation_id)
    assert [m.content for m in recovered.messages][-2:] == ["q6", "a6"]
