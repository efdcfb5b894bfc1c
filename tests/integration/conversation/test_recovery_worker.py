"""The conversation recovery worker, on SQLite and PostgreSQL, sync and async (issue 12:
conversations had no lease, so RecoveryWorker(kind="conversation") claimed nothing
while list_orphans() showed them).

A writer dies mid-turn (its user message durable, part of the reply flushed); the
worker claims the conversation (a new lease epoch), replays the pending user message
through the registered agent and completes the turn; the dead writer's handle is fenced.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import ConfigurationError, FencedError, Store
from agentckpt._backends.factory import parse_url
from agentckpt.conversation import (
    AsyncConversationRecoveryWorker,
    AsyncConversations,
    ConversationRecoveryWorker,
)
from agentckpt.runs import RecoveryWorker
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql


def age(url: str, run_id: Any, seconds: int = 120) -> None:
    """Make the conversation look silent for ``seconds`` (instead of waiting)."""
    if parse_url(url).dialect == "sqlite":
        past = f"strftime('%Y-%m-%dT%H:%M:%f', 'now', '-{seconds} seconds')"
    else:
        past = f"now() - interval '{seconds} seconds'"
    run_sql(
        url,
        f"UPDATE runs SET heartbeat_at = {past}, lease_expires_at = {past} WHERE run_id = ?",
        str(run_id),
    )


class Worker:
    """A recovery worker of either flavor, with a sync face for the test body."""

    def __init__(self, conversations: Any, answers: list[str], **options: Any) -> None:
        inner = getattr(conversations, "inner", conversations)
        self.seen: list[list[str]] = []
        if isinstance(inner, AsyncConversations):
            self.loop = conversations.loop
            self.worker: Any = AsyncConversationRecoveryWorker(inner, **options)

            async def answer(conv: Any) -> Any:
                return await self._answer_async(conv, answers)

            self.worker.register("weather-agent", answer, agent_config=CONFIG, tools=TOOLS)
        else:
            self.loop = None
            self.worker = ConversationRecoveryWorker(inner, **options)
            self.worker.register(
                "weather-agent",
                lambda conv: self._answer(conv, answers),
                agent_config=CONFIG,
                tools=TOOLS,
            )

    def _answer(self, conv: Any, answers: list[str]) -> Any:
        self.seen.append([m.content for m in conv.messages])
        text = answers.pop(0)
        if text == "fail":
            raise RuntimeError("the agent failed")
        return conv.add_assistant_message(text, timestamp="T").step

    async def _answer_async(self, conv: Any, answers: list[str]) -> Any:
        self.seen.append([m.content for m in conv.messages])
        text = answers.pop(0)
        if text == "fail":
            raise RuntimeError("the agent failed")
        return (await conv.add_assistant_message(text, timestamp="T")).step

    def recover_once(self) -> Any:
        if self.loop is None:
            return self.worker.recover_once()
        return self.loop.run_until_complete(self.worker.recover_once())


def cut_off(conversations: Any) -> Any:
    """A conversation whose writer died mid-turn, after flushing part of its reply."""
    conv = conversations.start(agent_id="weather-agent", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("q1", timestamp="T")
    conv.add_assistant_message("a1", timestamp="T")
    conv.add_user_message("weather in Berlin?", timestamp="T")
    conv.stream("It is partly")
    conv.flush()
    return conv  # the "dead" writer's handle


def test_the_worker_replays_the_pending_message_and_fences_the_dead_writer(
    make_conversations: Any,
) -> None:
    conversations = make_conversations()
    dead = cut_off(conversations)
    idle = conversations.start(agent_id="weather-agent", agent_config=CONFIG, tools=TOOLS)
    idle.add_user_message("q", timestamp="T")
    idle.add_assistant_message("a", timestamp="T")  # between turns: nothing to resume
    alive = cut_off(conversations)  # mid-turn, but its heartbeat is fresh
    for run_id in (dead.conversation_id, idle.conversation_id):
        age(make_conversations.url, run_id)

    worker = Worker(make_conversations(), ["Sunny, 21 degrees."], owner="rescuer")
    (recovered,) = worker.recover_once()
    assert (recovered.conversation_id, recovered.error, recovered.result) == (
        dead.conversation_id,
        None,
        2,  # the pending turn's step, now sealed
    )
    assert recovered.epoch == 1
    # The agent saw the history up to the pending user message, not the partial reply.
    assert worker.seen == [["q1", "a1", "weather in Berlin?"]]
    assert worker.recover_once() == []  # the idle and the live ones are not orphans

    final = make_conversations().recover(dead.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert [m.content for m in final.messages] == [
        "q1",
        "a1",
        "weather in Berlin?",
        "Sunny, 21 degrees.",
    ]
    assert final.pending is None
    with pytest.raises(FencedError):  # the dead writer wakes up: refused
        dead.add_assistant_message("It is partly cloudy.", timestamp="T")
    assert make_conversations().store.get_run(alive.conversation_id).lease_epoch == 0


def test_a_claimed_conversation_fences_its_old_writer_before_any_reply(
    make_conversations: Any,
) -> None:
    conversations = make_conversations()
    dead = cut_off(conversations)
    age(make_conversations.url, dead.conversation_id)
    worker = Worker(make_conversations(), ["fail"], lease_ttl=60)
    (recovered,) = worker.recover_once()
    assert isinstance(recovered.error, RuntimeError)
    with pytest.raises(FencedError):
        dead.add_assistant_message("late reply", timestamp="T")
    assert worker.recover_once() == []  # its lease is live: not claimed again at once
    still = make_conversations().recover(dead.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert still.pending is not None  # nothing was written: the turn is still pending


def test_the_run_recovery_worker_points_to_the_conversation_one(url: str) -> None:
    with Store.connect(url) as store, pytest.raises(ConfigurationError, match="Conversation"):
        RecoveryWorker(store, kind="conversation")
