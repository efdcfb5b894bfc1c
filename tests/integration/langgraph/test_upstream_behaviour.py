"""What LangGraph's own savers' test suites expect and our saver first did differently.

Each test is one failure found by running langgraph-checkpoint-sqlite 3.1.2's,
langgraph-checkpoint 4.3.2's (InMemorySaver) and langgraph-checkpoint-postgres 3.2.0's
tests against ``AgentckptSaver`` (docs/langgraph.md, "Other projects' test suites"), on
a fresh SQLite file and a fresh PostgreSQL schema (``url``).
"""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)

from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import TASKS
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from agentckpt.integrations.langgraph import AgentckptSaver
from agentckpt.integrations.langgraph.records import TASKS_CHANNEL

THREAD: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def checkpoint(checkpoint_id: str, values: dict[str, Any] | None = None) -> Checkpoint:
    value = empty_checkpoint()
    value["id"] = checkpoint_id
    value["channel_values"] = dict(values or {})
    return value


def at(checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {**THREAD["configurable"], "checkpoint_id": checkpoint_id}}


def test_metadata_keeps_a_writes_key(saver: AgentckptSaver) -> None:
    # InMemorySaver and SqliteSaver keep every key; only PostgresSaver dropped "writes".
    metadata: Any = {"source": "loop", "step": 1, "writes": {"foo": "bar"}, "score": None}
    saved = saver.put(THREAD, checkpoint("c1"), metadata, {})

    loaded = saver.get_tuple(saved)
    assert loaded is not None
    assert loaded.metadata == metadata
    found = list(saver.list(None, filter={"writes": {"foo": "bar"}}))
    assert [t.config["configurable"]["checkpoint_id"] for t in found] == ["c1"]


def test_an_empty_checkpoint_id_names_the_latest_checkpoint(saver: AgentckptSaver) -> None:
    root = saver.put(THREAD, checkpoint("a-older"), {}, {})
    saver.put(root, checkpoint("z-newer"), {}, {})

    latest = saver.get_tuple(at(""))
    assert latest is not None
    assert latest.config["configurable"]["checkpoint_id"] == "z-newer"
    # A put under an empty id has no parent (LangGraph's savers test the id with `if`).
    orphan = saver.put(
        {"configurable": {"thread_id": "u", "checkpoint_ns": "", "checkpoint_id": ""}},
        checkpoint("first"),
        {},
        {},
    )
    loaded = saver.get_tuple(orphan)
    assert loaded is not None
    assert loaded.parent_config is None


def test_delta_channel_history_walks_the_parent_chain(saver: AgentckptSaver) -> None:
    root = saver.put(THREAD, checkpoint("a-root", {"ch": "seed"}), {}, {})
    saver.put_writes(root, [("ch", "write-root"), ("other", 1)], "task")
    child = saver.put(root, checkpoint("z-child"), {}, {})

    history = saver.get_delta_channel_history(config=child, channels=["ch", "none"])
    assert history == {
        "ch": {"writes": [("task", "ch", "write-root")], "seed": "seed"},
        "none": {"writes": []},
    }
    assert saver.get_delta_channel_history(config=at(""), channels=["ch"]) == {
        "ch": {"writes": [("task", "ch", "write-root")], "seed": "seed"}
    }
    assert saver.get_delta_channel_history(config=child, channels=[]) == {}


def test_delta_channel_history_stops_where_the_parent_chain_loops(
    saver: AgentckptSaver,
) -> None:
    # Putting "a" again under its child "b" makes the chain a -> b -> a: LangGraph's base
    # walk followed it for ever.
    a = saver.put(THREAD, checkpoint("cid-a"), {}, {})
    b = saver.put(a, checkpoint("cid-b"), {}, {})
    saver.put(b, checkpoint("cid-a"), {}, {})

    results: list[Any] = []
    walker = threading.Thread(
        target=lambda: results.append(saver.get_delta_channel_history(config=b, channels=["ch"])),
        daemon=True,  # a walk that never ends must not keep the test process alive
    )
    walker.start()
    walker.join(timeout=30)
    assert not walker.is_alive(), "the walk did not stop on a parent chain that loops"
    assert results == [{"ch": {"writes": []}}]


async def test_async_delta_channel_history_stops_where_the_parent_chain_loops(
    url: str,
) -> None:
    async with AgentckptSaver.afrom_url(url) as saver:
        a = await saver.aput(THREAD, checkpoint("cid-a", {"ch": 0}), {}, {})
        await saver.aput_writes(a, [("ch", 1)], "task")
        b = await saver.aput(a, checkpoint("cid-b"), {}, {})
        await saver.aput(b, checkpoint("cid-a"), {}, {})  # no value now; its writes stay

        history = await asyncio.wait_for(
            saver.aget_delta_channel_history(config=b, channels=["ch"]), timeout=30
        )
    assert history == {"ch": {"writes": [("task", "ch", 1)]}}


async def test_await_setup_opens_the_async_store(url: str) -> None:
    # Code written for AsyncPostgresSaver sets a saver up with `await saver.setup()`.
    saver = AgentckptSaver(url)
    try:
        await saver.setup()
        saved = await saver.aput(THREAD, checkpoint("c1"), {}, {})
        loaded = await saver.aget_tuple(saved)
        assert loaded is not None
        assert loaded.config["configurable"]["checkpoint_id"] == "c1"
        assert saver.get_tuple(saved) is not None  # the sync store was opened too
    finally:
        await saver.aclose()


def test_keep_latest_keeps_writes_saved_before_their_checkpoint(saver: AgentckptSaver) -> None:
    # langgraph-checkpoint-postgres's test_prune.py: with durability="async" a step's
    # writes are saved before its checkpoint; pruning in between must not delete them.
    first = saver.put(THREAD, checkpoint("c1", {"a": "1"}), {}, {})
    saver.put_writes(first, [("a", 2)], "task-old")
    head = saver.put(first, checkpoint("c2", {"a": "2"}), {}, {})
    saver.put_writes(at("c3"), [("a", 4)], "task-new")  # c3 is not stored yet

    saver.prune(["t"], strategy="keep_latest")
    saver.put(head, checkpoint("c3", {"a": "3"}), {}, {})

    loaded = saver.get_tuple(at("c3"))
    assert loaded is not None
    assert [value for _, _, value in loaded.pending_writes] == [4]
    assert saver.get_tuple(at("c1")) is None  # pruned, and its writes with it
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(THREAD)] == [
        "c3",
        "c2",
    ]


def test_a_pre_v4_checkpoint_takes_its_parents_sends_as_the_tasks_value(
    saver: AgentckptSaver,
) -> None:
    """PostgresSaver's ``test_pending_sends_migration``: a checkpoint of version < 4 (every
    one LangGraph 1.2 writes is v2) reads its parent's writes to the tasks channel as that
    channel's value, in the order they apply, with the greatest channel version; the parent
    itself gets none, and ``list`` does the same."""
    first = saver.put(THREAD, checkpoint("c1"), {}, {})
    saver.put_writes(first, [(TASKS, "send-1"), (TASKS, "send-2")], task_id="task-1")
    saver.put_writes(first, [(TASKS, "send-3"), ("other", "x")], task_id="task-2")
    parent = saver.get_tuple(first)
    assert parent is not None
    assert parent.checkpoint["channel_values"] == {}
    assert parent.checkpoint["channel_versions"] == {}

    child = checkpoint("c2", {"a": 1})
    child["channel_versions"] = {"a": 5, "b": 7}
    second = saver.put(first, child, {}, {"a": 5})
    loaded = saver.get_tuple(second)
    assert loaded is not None
    assert loaded.checkpoint["channel_values"] == {"a": 1, TASKS: ["send-1", "send-2", "send-3"]}
    assert loaded.checkpoint["channel_versions"] == {"a": 5, "b": 7, TASKS: 7}
    listed = [t.checkpoint["channel_values"] for t in saver.list(THREAD)]
    assert listed == [{"a": 1, TASKS: ["send-1", "send-2", "send-3"]}, {}]

    # A checkpoint of version 4 or later keeps what it stored.
    newer = checkpoint("c3", {"a": 2})
    newer["v"] = 4
    newer["channel_versions"] = {"a": 6}
    third = saver.put(second, newer, {}, {"a": 6})
    saver.put_writes(second, [(TASKS, "send-4")], task_id="task-3")
    kept = saver.get_tuple(third)
    assert kept is not None
    assert kept.checkpoint["channel_values"] == {"a": 2}
    assert kept.checkpoint["channel_versions"] == {"a": 6}


def test_the_step_index_spells_langgraphs_tasks_channel() -> None:
    assert TASKS_CHANNEL == TASKS


class FanOut(TypedDict):
    """The fan-out graph's state (at module level: LangGraph reads its annotations)."""

    subjects: list[str]
    jokes: Annotated[list[str], operator.add]


def test_a_send_fan_out_resumes_as_on_langgraphs_own_saver(saver: AgentckptSaver) -> None:
    """A compiled graph whose node fans out with ``Send``, interrupted before the sent
    tasks and resumed: the same next tasks, result and history as on ``InMemorySaver``,
    with the sends read back (a v2 checkpoint takes its parent's sends, above)."""

    def run(checkpointer: Any) -> tuple[Any, ...]:
        graph = StateGraph(FanOut)
        graph.add_node("start", lambda state: {})
        graph.add_node("joke", lambda state: {"jokes": [f"joke about {state['subject']}"]})
        graph.add_node("done", lambda state: {"jokes": ["end"]})
        graph.add_edge(START, "start")
        graph.add_conditional_edges(
            "start", lambda state: [Send("joke", {"subject": s}) for s in state["subjects"]]
        )
        graph.add_edge("joke", "done")
        graph.add_edge("done", END)
        app = graph.compile(checkpointer=checkpointer, interrupt_before=["joke"])
        config: Any = {"configurable": {"thread_id": "fan-out"}}
        app.invoke({"subjects": ["cats", "dogs", "owls"], "jokes": []}, config)
        waiting = app.get_state(config).next
        result = app.invoke(None, config)
        states = app.get_state_history(config)
        history = [(s.next, sorted(s.values.get("jokes", []))) for s in states]
        return waiting, sorted(result["jokes"]), history

    ours = run(saver)
    assert ours[0] == ("joke", "joke", "joke")
    assert ours == run(InMemorySaver())
