"""Channel versions in both formats: threads started by LangGraph's own savers continue here.

LangGraph's ``InMemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` write string versions
(``"<32 digits>.<random fraction>"``); agentckpt writes ints. A thread keeps its format.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from agentckpt import InvalidValueError
from agentckpt.integrations.langgraph import AgentckptSaver
from agentckpt.integrations.langgraph.versions import next_version

# The fraction is ``random.random()`` formatted with ``016``, as LangGraph's savers do:
# zero-padded when its repr is short ("00.78..."), in exponent form below 1e-4.
STRING_VERSION = re.compile(r"^\d{32}\.[0-9][0-9.e-]*$")


def echo_graph(checkpointer: Any) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        count = len(state["messages"])
        return {"messages": [AIMessage(f"echo {state['messages'][-1].content}", id=f"m{count}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    return builder.compile(checkpointer=checkpointer)


def say(graph: Any, thread: str, text: str) -> list[str]:
    state = graph.get_state({"configurable": {"thread_id": thread}})
    count = len(state.values.get("messages", [])) if state.values else 0
    out = graph.invoke(
        {"messages": [HumanMessage(text, id=f"m{count}")]}, {"configurable": {"thread_id": thread}}
    )
    return [m.content for m in out["messages"]]


def versions(saver: Any, thread: str) -> dict[str, Any]:
    found = saver.get_tuple({"configurable": {"thread_id": thread}})
    return dict(found.checkpoint["channel_versions"])


def integer_part(version: Any) -> int:
    return int(str(version).split(".")[0])


# -- the next version -------------------------------------------------------------------------


def test_next_version_continues_each_format() -> None:
    assert next_version(None) == 1
    assert next_version(7) == 8
    assert next_version(2.0) == 3.0
    after = next_version("00000000000000000000000000000005.0.7912803477427346")
    assert isinstance(after, str)
    assert STRING_VERSION.match(after), after
    assert after.startswith("00000000000000000000000000000006.")
    assert after > "00000000000000000000000000000005.0.9999999999999999"
    # A bare integer string (LangGraph accepts one) continues as LangGraph's savers do.
    assert next_version("41").startswith("0" * 30 + "42.")  # type: ignore[union-attr]
    # Two continuations of one version differ in the fraction, as with LangGraph's savers.
    assert len({next_version("00000000000000000000000000000005.0.5") for _ in range(20)}) > 1


@pytest.mark.parametrize("bad", ["abc", "", ".5", "-1.2", "٣.0", True, b"1", [1]])
def test_a_version_of_neither_format_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidValueError, match="channel version"):
        next_version(bad)


def test_the_saver_continues_a_string_version_as_langgraph_does(saver: AgentckptSaver) -> None:
    # LangGraph's own base class raises NotImplementedError for a string version.
    reference = InMemorySaver()
    current = reference.get_next_version(reference.get_next_version(None, None), None)
    ours = saver.get_next_version(current, None)
    theirs = reference.get_next_version(current, None)
    assert STRING_VERSION.match(ours)
    assert ours[:33] == theirs[:33]  # the same integer part; the fraction is random
    assert saver.get_next_version(None, None) == 1
    assert saver.get_next_version(3, None) == 4


# -- threads started by LangGraph's savers ------------------------------------------------------


@contextmanager
def langgraph_saver(kind: str, tmp_path: Path, pg_server_dsn: str | None) -> Iterator[Any]:
    """One of LangGraph's own savers, on a fresh database."""
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(tmp_path / "langgraph.db")) as saver:
            yield saver
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        assert pg_server_dsn is not None
        base = pg_server_dsn.split("?")[0]
        schema = f"lgv_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            with PostgresSaver.from_conn_string(
                f"{base}?options=-csearch_path%3D{schema}"
            ) as saver:
                saver.setup()
                yield saver
        finally:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def their_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    dsn = request.getfixturevalue("pg_server_dsn") if request.param == "postgres" else None
    with langgraph_saver(request.param, tmp_path, dsn) as saver:
        yield saver


def move_thread(source: Any, target: AgentckptSaver, thread: str) -> None:
    """Put every checkpoint of a thread (oldest first, with its writes) into ``target``."""
    tuples = list(source.list({"configurable": {"thread_id": thread}}))
    for found in reversed(tuples):
        parent = found.parent_config or {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        target.put(
            parent,
            found.checkpoint,
            found.metadata,
            found.checkpoint["channel_versions"],
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in found.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            target.put_writes(found.config, writes, task_id)


def test_a_thread_of_langgraphs_saver_resumes_and_continues(
    their_saver: Any, saver: AgentckptSaver
) -> None:
    theirs = echo_graph(their_saver)
    say(theirs, "t", "one")
    say(theirs, "t", "two")
    started = versions(their_saver, "t")
    assert all(STRING_VERSION.match(v) for v in started.values()), started

    move_thread(their_saver, saver, "t")
    ours = echo_graph(saver)
    assert (
        ours.get_state({"configurable": {"thread_id": "t"}}).values
        == theirs.get_state({"configurable": {"thread_id": "t"}}).values
    )
    assert say(ours, "t", "three") == ["one", "echo one", "two", "echo two", "three", "echo three"]
    assert say(ours, "t", "four")[-2:] == ["four", "echo four"]

    # Still LangGraph's format, each channel one integer further on per update.
    continued = versions(saver, "t")
    assert set(continued) == set(started)
    assert all(STRING_VERSION.match(v) for v in continued.values()), continued
    assert integer_part(continued["messages"]) == integer_part(started["messages"]) + 6
    # And LangGraph's saver continues it the same way.
    say(theirs, "t", "three")
    say(theirs, "t", "four")
    assert {k: integer_part(v) for k, v in versions(their_saver, "t").items()} == {
        k: integer_part(v) for k, v in continued.items()
    }
    assert (
        theirs.get_state({"configurable": {"thread_id": "t"}}).values
        == ours.get_state({"configurable": {"thread_id": "t"}}).values
    )


def test_int_and_string_threads_share_one_saver(saver: AgentckptSaver) -> None:
    memory = InMemorySaver()
    say(echo_graph(memory), "theirs", "hello")
    move_thread(memory, saver, "theirs")
    graph = echo_graph(saver)
    for turn in range(3):  # interleaved: one graph, one saver, both formats
        say(graph, "ours", f"ours {turn}")
        say(graph, "theirs", f"theirs {turn}")
    assert all(type(v) is int for v in versions(saver, "ours").values())
    assert all(STRING_VERSION.match(v) for v in versions(saver, "theirs").values())
    assert versions(saver, "ours")["messages"] == 3 * 3
    assert integer_part(versions(saver, "theirs")["messages"]) == 3 + 3 * 3

    # A copy keeps the format and goes on with it.
    saver.copy_thread("theirs", "copy")
    assert say(graph, "copy", "more")[-2:] == ["more", "echo more"]
    assert all(STRING_VERSION.match(v) for v in versions(saver, "copy").values())
    assert len(say(graph, "theirs", "last")) == 2 * 5
