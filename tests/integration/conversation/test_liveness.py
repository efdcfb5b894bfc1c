"""Heartbeats and orphans: a conversation whose writer went silent can be found.

No sleeps: a silent writer is made by moving its heartbeat back in the database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from agentckpt import RunNotFoundError
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql


def go_silent(url: str, conversation_id: Any, seconds: int) -> None:
    """Pretend the writer's last sign of life was ``seconds`` ago (database clock)."""
    if url.startswith("sqlite"):
        sql = (
            "UPDATE runs SET heartbeat_at = strftime('%Y-%m-%dT%H:%M:%f', 'now', ?) "
            "WHERE run_id = ?"
        )
        run_sql(url, sql, f"-{seconds} seconds", str(conversation_id))
    else:
        sql = "UPDATE runs SET heartbeat_at = now() - make_interval(secs => ?) WHERE run_id = ?"
        run_sql(url, sql, seconds, str(conversation_id))


def ids(orphans: list[Any]) -> list[Any]:
    return [o.conversation_id for o in orphans]


def test_a_silent_conversation_is_an_orphan_until_it_beats_again(
    make_conversations: Any,
) -> None:
    conversations = make_conversations()
    quiet = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    alive = conversations.start(agent_id="b", agent_config=CONFIG, tools=TOOLS)
    go_silent(make_conversations.url, quiet.conversation_id, 3600)
    go_silent(make_conversations.url, alive.conversation_id, 10)
    orphans = conversations.list_orphans(60)
    assert ids(orphans) == [quiet.conversation_id]
    orphan = orphans[0]
    assert (orphan.agent_id, orphan.head_step, orphan.head_open) == ("a", None, False)
    assert isinstance(orphan.heartbeat_at, datetime)
    assert orphan.heartbeat_at.tzinfo
    assert set(ids(conversations.list_orphans(5))) == {
        quiet.conversation_id,
        alive.conversation_id,
    }
    beat = quiet.heartbeat()
    assert beat > orphan.heartbeat_at
    assert conversations.list_orphans(60) == []


def test_orphans_show_where_their_writer_died(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("q", timestamp="T")
    conv.add_assistant_message("a", timestamp="T")
    conv.add_user_message("cut off", timestamp="T")
    go_silent(make_conversations.url, conv.conversation_id, 600)
    [orphan] = conversations.list_orphans(300)
    assert (orphan.head_step, orphan.head_open) == (2, True)
    recovered = conversations.recover(orphan.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert recovered.pending is not None
    assert recovered.pending.turn == 2


def test_commits_count_as_heartbeats(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    go_silent(make_conversations.url, conv.conversation_id, 600)
    conv.add_user_message("q", timestamp="T")
    assert conversations.list_orphans(300) == []


def test_ended_conversations_and_other_runs_are_not_orphans(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    run = conversations.store.create_run(agent_id="loop")
    conversations.end(conv.conversation_id)
    go_silent(make_conversations.url, conv.conversation_id, 600)
    go_silent(make_conversations.url, run.run_id, 600)
    assert conversations.list_orphans(60) == []


def test_limits_and_bad_arguments(make_conversations: Any) -> None:
    conversations = make_conversations()
    for _ in range(3):
        conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
        go_silent(make_conversations.url, conv.conversation_id, 600)
    assert len(conversations.list_orphans(60, limit=2)) == 2
    with pytest.raises(ValueError, match="older_than_seconds"):
        conversations.list_orphans(-1)
    with pytest.raises(RunNotFoundError):
        conversations.heartbeat("00000000-0000-0000-0000-000000000001")
