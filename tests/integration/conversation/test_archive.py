"""Archiving old turns to the history table: atomic with the step, read back exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentckpt import SnapshotPolicy
from agentckpt.conversation import ConversationOptions, ToolCall, state_migrations
from agentckpt.errors import CorruptDataError, InvalidValueError
from tests.support.conversation import CONFIG, TOOLS, dumps, run_sql

SMALL = ConversationOptions(archive_threshold=2000, archive_keep_turns=2)


def chat(conversations: Any, turns: int) -> Any:
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    for turn in range(turns):
        conv.add_user_message(f"question {turn} " + "q" * 150, timestamp=f"T{turn}")
        call = ToolCall("get_weather", {"turn": turn}, result={"t": turn}, duration_ms=turn)
        conv.add_assistant_message(f"answer {turn} " + "a" * 150, tool_calls=[call], timestamp="A")
    return conv


def written(conv: Any, turns: int) -> list[dict[str, Any]]:
    """The messages a conversation of ``turns`` turns wrote, as JSON."""
    out = []
    for turn in range(turns):
        out.append(
            {"role": "user", "content": f"question {turn} " + "q" * 150, "timestamp": f"T{turn}"}
        )
        out.append(
            {
                "role": "assistant",
                "content": f"answer {turn} " + "a" * 150,
                "tool_calls": [
                    {
                        "tool_name": "get_weather",
                        "arguments": {"turn": turn},
                        "result": {"t": turn},
                        "duration_ms": turn,
                    }
                ],
                "timestamp": "A",
            }
        )
    return out


def test_old_turns_move_to_history_and_read_back_exactly(make_conversations: Any) -> None:
    conv = chat(make_conversations(options=SMALL), 30)
    conversations = make_conversations()
    steps = conversations.store.steps(conv.conversation_id)
    assert max(info.state_bytes for info in steps[-5:]) < 2000 + 1200  # the hot state stays small
    recovered = conversations.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    archive = recovered.state.archive
    assert archive is not None
    assert archive.segments >= 3
    assert archive.messages + len(recovered.state.conversation) == 60
    assert json.dumps([m.to_json() for m in recovered.messages]) == json.dumps(written(conv, 30))
    assert dumps(conversations.all_messages(conv.conversation_id)) == json.dumps(written(conv, 30))
    assert dumps(conv.all_messages()) == json.dumps(written(conv, 30))
    assert len(conversations.history(conv.conversation_id)) == archive.messages
    assert recovered.state.conversation[0].role == "user"  # cut at a turn boundary


def test_each_history_row_is_written_by_the_step_that_dropped_its_turns(
    make_conversations: Any,
) -> None:
    keep_all = {"policy": SnapshotPolicy(prune=False), "migrations": state_migrations()}
    conv = chat(make_conversations(options=SMALL, store_options=keep_all), 20)
    rows = run_sql(
        make_conversations.url,
        "SELECT seq, step, item_count FROM history WHERE run_id = ? ORDER BY seq",
        str(conv.conversation_id),
    )
    assert len(rows) >= 2
    assert [seq for seq, _, _ in rows] == list(range(len(rows)))
    store = make_conversations(store_options=keep_all).store
    archived = 0
    for seq, step, count in rows:
        before = store.state_at(conv.conversation_id, step - 1).state
        after = store.state_at(conv.conversation_id, step).state
        assert before.get("archive", {"messages": 0, "segments": 0}) == {
            "messages": archived,
            "segments": seq,
        }
        archived += count
        assert after["archive"] == {"messages": archived, "segments": seq + 1}
        assert after["conversation"][0]["role"] == "user"


def test_a_turn_that_archives_seals_as_a_snapshot(make_conversations: Any) -> None:
    # Its delta would remove the archived turns one op each from the last snapshot,
    # which holds them: every resume until the next snapshot would replay that.
    keep_all = {"policy": SnapshotPolicy(prune=False)}
    conv = chat(make_conversations(options=SMALL, store_options=keep_all), 20)
    archiving = run_sql(
        make_conversations.url,
        "SELECT step FROM history WHERE run_id = ? ORDER BY seq",
        str(conv.conversation_id),
    )
    assert len(archiving) >= 2
    steps = make_conversations().store.steps(conv.conversation_id)
    kinds = {info.step: info.kind for info in steps}
    assert [kinds[step] for (step,) in archiving] == ["snapshot"] * len(archiving)
    # Only those and the interval's: the turns after an archiving one are deltas again.
    assert sum(kind == "snapshot" for kind in kinds.values()) < len(kinds) // 2


def test_a_refused_archiving_turn_archives_again_and_reads_back(make_conversations: Any) -> None:
    conversations = make_conversations(options=SMALL)
    conv = chat(conversations, 1)
    cid = conv.conversation_id
    turns = 1
    while conversations.store.steps(cid)[-1].state_bytes <= SMALL.archive_threshold:
        conv.add_user_message(f"question {turns} " + "q" * 150, timestamp=f"T{turns}")
        call = ToolCall("get_weather", {"turn": turns}, result={"t": turns}, duration_ms=turns)
        conv.add_assistant_message(f"answer {turns} " + "a" * 150, tool_calls=[call], timestamp="A")
        turns += 1
    before = conversations.store.steps(cid)
    with pytest.raises(InvalidValueError):  # refused: the archive it made is undone
        conv.add_user_message(float("nan"))
    assert conversations.store.steps(cid) == before
    conv.add_user_message(f"question {turns} " + "q" * 150, timestamp=f"T{turns}")
    call = ToolCall("get_weather", {"turn": turns}, result={"t": turns}, duration_ms=turns)
    conv.add_assistant_message(f"answer {turns} " + "a" * 150, tool_calls=[call], timestamp="A")
    (last,) = run_sql(
        make_conversations.url, "SELECT max(step) FROM history WHERE run_id = ?", str(cid)
    )
    assert last == (turns + 1,)
    # The archiving turn's snapshot pruned the steps before it: a resume starts there.
    kept = [(info.step, info.kind) for info in conversations.store.steps(cid)]
    assert kept == [(turns + 1, "snapshot")]
    assert dumps(make_conversations().all_messages(cid)) == json.dumps(written(conv, turns + 1))


def test_archiving_keeps_every_state_small_and_resumes_writing(make_conversations: Any) -> None:
    conv = chat(make_conversations(options=SMALL), 12)
    opened = make_conversations(options=SMALL).open(
        conv.conversation_id, agent_config=CONFIG, tools=TOOLS
    )
    opened.add_user_message("question 12 " + "q" * 150, timestamp="T12")
    call = ToolCall("get_weather", {"turn": 12}, result={"t": 12}, duration_ms=12)
    opened.add_assistant_message("answer 12 " + "a" * 150, tool_calls=[call], timestamp="A")
    conversations = make_conversations()
    assert dumps(conversations.all_messages(conv.conversation_id)) == json.dumps(written(conv, 13))


def test_no_archive_below_the_threshold(make_conversations: Any) -> None:
    conv = chat(make_conversations(), 10)
    rows = run_sql(
        make_conversations.url,
        "SELECT count(*) FROM history WHERE run_id = ?",
        str(conv.conversation_id),
    )
    assert rows == [(0,)]
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert recovered.state.archive is None
    assert "archive" not in recovered.state.to_json()


def test_open_reads_the_hot_state_only_and_history_on_demand(make_conversations: Any) -> None:
    conv = chat(make_conversations(options=SMALL), 30)
    cid = conv.conversation_id
    # Without its history rows, a conversation still opens and continues: open() never
    # reads them (a resume costs the hot state, however long the conversation).
    saved = run_sql(
        make_conversations.url, "SELECT count(*) FROM history WHERE run_id = ?", str(cid)
    )
    assert saved[0][0] >= 3
    opened = make_conversations(options=SMALL).open(cid, agent_config=CONFIG, tools=TOOLS)
    archive = opened.state.archive
    assert archive is not None
    assert opened.recovery.unread_history == archive.messages
    assert opened.recovery.messages == opened.messages  # the hot ones, as stored
    assert archive.messages + len(opened.messages) == 60
    assert dumps(opened.all_messages()) == json.dumps(written(conv, 30))  # read on demand
    opened.add_user_message("question 30 " + "q" * 150, timestamp="T30")
    call = ToolCall("get_weather", {"turn": 30}, result={"t": 30}, duration_ms=30)
    opened.add_assistant_message("answer 30 " + "a" * 150, tool_calls=[call], timestamp="A")
    assert dumps(make_conversations().all_messages(cid)) == json.dumps(written(conv, 31))


def test_open_does_not_touch_history_rows(make_conversations: Any) -> None:
    conv = chat(make_conversations(options=SMALL), 20)
    cid = conv.conversation_id
    run_sql(make_conversations.url, "DELETE FROM history WHERE run_id = ?", str(cid))
    conversations = make_conversations(options=SMALL)
    opened = conversations.open(cid, agent_config=CONFIG, tools=TOOLS)
    assert opened.messages[-1].content == "answer 19 " + "a" * 150
    hot = conversations.recover(cid, agent_config=CONFIG, tools=TOOLS, include_history=False)
    assert hot.unread_history == hot.state.archived_messages > 0
    with pytest.raises(CorruptDataError):  # the full read notices what is missing
        conversations.recover(cid, agent_config=CONFIG, tools=TOOLS)


def test_recover_without_history_finds_the_pending_turn_and_dangling_calls(
    make_conversations: Any,
) -> None:
    conv = chat(make_conversations(options=SMALL), 20)
    conv.add_user_message("question 20", timestamp="T20")
    conv.start_tool_call("send_email", {"to": "bob"})
    conv.flush()
    conversations = make_conversations(options=SMALL)
    full = conversations.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    hot = conversations.recover(
        conv.conversation_id, agent_config=CONFIG, tools=TOOLS, include_history=False
    )
    skipped = hot.unread_history
    assert skipped == full.state.archived_messages > 0
    assert full.messages[skipped:] == hot.messages
    assert hot.pending is not None
    assert full.pending is not None
    assert hot.pending.start + skipped == full.pending.start
    assert hot.messages[hot.pending.start].content == "question 20"
    assert [(d.message_index + skipped, d.call_index) for d in hot.dangling] == [
        (d.message_index, d.call_index) for d in full.dangling
    ]
    assert hot.replay_messages()[-1].content == "question 20"
    opened = conversations.open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert opened.turn_open
    assert opened.messages[-1].tool_calls[0].result["error"] == "interrupted"
