"""Acknowledgements through the conversation API and the Agents SDK session
(reliability rows 1 and 7), on SQLite and PostgreSQL.

Row 1: when a call returns, what it wrote is visible to a brand-new connection at once.
Row 7: when the database commits but the answer is lost (the backend commits, then
reports a broken connection, :class:`OutcomeUnknownError`), the front door either rides
it out or raises it; a retry of the same call is then recognised, never stored twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from agentckpt import OutcomeUnknownError, Store
from agentckpt.conversation import Conversations
from tests.integration.conversation.conftest import api, clock, make_conversations, raw_store
from tests.support.acks import after_each_commit
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql

__all__ = ["api", "clock", "make_conversations"]  # fixtures used here


def lose_next_ack(store: Any) -> list[int]:
    """Make the store's next backend commit commit, then raise OutcomeUnknownError;
    returns the list of batches committed since (its length counts them)."""
    backend = store.backend
    batches: list[int] = []

    def after(writes: Any) -> None:
        batches.append(len(writes))
        if len(batches) == 1:
            raise OutcomeUnknownError("simulated: the connection broke after COMMIT was sent")

    backend.commit_batch = after_each_commit(backend, after)
    return batches


def messages_in_a_new_store(url: str, conversation_id: Any) -> list[Any]:
    with Store.connect(url) as fresh:
        recovery = Conversations(fresh).recover(conversation_id, agent_config=CONFIG, tools=TOOLS)
        return [m.content for m in recovery.messages]


def head_in_a_new_connection(url: str, run_id: Any) -> Any:
    (row,) = run_sql(url, "SELECT head_step FROM runs WHERE run_id = ?", str(run_id))
    return row[0]


def test_a_returned_conversation_write_is_visible_to_a_new_connection(
    make_conversations: Any,
) -> None:
    url = make_conversations.url
    conv = make_conversations().start(agent_id="w", agent_config=CONFIG, tools=TOOLS)
    expected: list[Any] = []
    heads = [head_in_a_new_connection(url, conv.conversation_id)]
    for n in range(3):
        conv.add_user_message(f"q{n}")
        expected.append(f"q{n}")
        # Durable before the model runs: a new connection and a new store see it now.
        heads.append(head_in_a_new_connection(url, conv.conversation_id))
        assert heads[-1] is not None
        assert heads[-2] is None or heads[-1] > heads[-2], heads
        assert messages_in_a_new_store(url, conv.conversation_id) == expected
        conv.add_assistant_message(f"a{n}")
        expected.append(f"a{n}")
        assert messages_in_a_new_store(url, conv.conversation_id) == expected


WRITES: dict[str, Callable[[Any], Any]] = {
    "user message": lambda conv: conv.add_user_message("q2"),
    "assistant message": lambda conv: conv.add_assistant_message("a2"),
}


@pytest.mark.parametrize("which", sorted(WRITES))
def test_a_lost_acknowledgement_in_a_conversation_stores_the_message_once(
    make_conversations: Any, which: str
) -> None:
    url = make_conversations.url
    conversations = make_conversations()
    conv = conversations.start(agent_id="w", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("q1")
    conv.add_assistant_message("a1")
    if which == "assistant message":
        conv.add_user_message("q2")
    before = messages_in_a_new_store(url, conv.conversation_id)

    batches = lose_next_ack(raw_store(conversations))
    try:
        WRITES[which](conv)
    except OutcomeUnknownError:
        WRITES[which](conv)  # the caller cannot know; it retries the same call
    assert batches, "the write never reached the backend"
    got = messages_in_a_new_store(url, conv.conversation_id)
    assert got == [*before, "a2" if which == "assistant message" else "q2"]
    # And the conversation goes on from there.
    if which == "user message":
        conv.add_assistant_message("a2")
    conv.add_user_message("q3")
    assert messages_in_a_new_store(url, conv.conversation_id) == ["q1", "a1", "q2", "a2", "q3"]


# -- the OpenAI Agents SDK session ---------------------------------------------------------


def with_session(url: str, body: Callable[[Any, Store], Any]) -> Any:
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents import AgentckptSession

    async def go() -> Any:
        with Store.connect(url) as store, AgentckptSession("acks", store=store) as session:
            return await body(session, store)

    return asyncio.run(go())


async def read_items(url: str) -> list[Any]:
    """The session's items as a new store and session read them."""
    from agentckpt.integrations.openai_agents import AgentckptSession

    with Store.connect(url) as store, AgentckptSession("acks", store=store) as session:
        return list(await session.get_items())


def items_in_a_new_store(url: str) -> list[Any]:
    return asyncio.run(read_items(url))


def test_a_returned_session_append_is_visible_to_a_new_store(url: str) -> None:
    async def body(session: Any, store: Store) -> None:
        for n in range(3):
            await session.add_items([{"n": n}])
            assert await read_items(url) == [{"n": i} for i in range(n + 1)]

    with_session(url, body)


def test_a_lost_acknowledgement_in_a_session_stores_the_items_once(url: str) -> None:
    async def body(session: Any, store: Store) -> list[int]:
        await session.add_items([{"n": 1}])
        batches = lose_next_ack(store)
        try:
            await session.add_items([{"n": 2}, {"n": 3}])
        except OutcomeUnknownError:
            await session.add_items([{"n": 2}, {"n": 3}])
        await session.add_items([{"n": 4}])
        return batches

    batches = with_session(url, body)
    assert batches, "the append never reached the backend"
    assert items_in_a_new_store(url) == [{"n": n} for n in range(1, 5)]


# -- the LangGraph saver -------------------------------------------------------------------


def test_a_lost_acknowledgement_in_the_langgraph_saver_stores_the_checkpoint_once(
    url: str,
) -> None:
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    from langgraph.checkpoint.base import empty_checkpoint

    from agentckpt import SnapshotPolicy
    from agentckpt.integrations.langgraph import AgentckptSaver

    def put(saver: Any, n: int, parent: Any = None) -> Any:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"n": n}
        checkpoint["channel_versions"] = {"n": n}
        cfg: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        if parent is not None:
            cfg["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        meta = {"source": "loop", "step": n, "parents": {}}
        return saver.put(cfg, checkpoint, meta, checkpoint["channel_versions"])

    with Store.connect(url, policy=SnapshotPolicy(prune=False)) as store:
        saver = AgentckptSaver(store=store)
        first = put(saver, 1)
        batches = lose_next_ack(store)
        try:
            second = put(saver, 2, first)
        except OutcomeUnknownError:
            second = put(saver, 2, first)  # the retry of the very same put
        assert batches, "the put never reached the backend"
        third = put(saver, 3, second)
        history = list(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}))
        assert [c.checkpoint["channel_values"]["n"] for c in history] == [3, 2, 1]
        assert (
            history[0].config["configurable"]["checkpoint_id"]
            == (third["configurable"]["checkpoint_id"])
        )
