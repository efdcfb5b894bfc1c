"""``AgentckptSaver.from_conn_string``: the connection strings LangGraph's savers take."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)

from langchain_core.messages import HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from agentckpt import ConfigurationError, Store
from agentckpt.integrations.langgraph import AgentckptSaver
from agentckpt.integrations.langgraph.conn_strings import store_url


def graph_on(saver: AgentckptSaver) -> object:
    builder = StateGraph(MessagesState)
    builder.add_node("bot", lambda state: {"messages": [("ai", "hi back")]})
    builder.add_edge(START, "bot")
    return builder.compile(checkpointer=saver)


CONFIG = {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("checkpoints.sqlite", "sqlite:///checkpoints.sqlite"),
        ("dir/graph.db", "sqlite:///dir/graph.db"),
        ("/var/lib/app/graph.db", "sqlite:////var/lib/app/graph.db"),
        (":memory:", "sqlite:///:memory:"),
        ("sqlite:///kept.db", "sqlite:///kept.db"),
        ("postgresql://app:pw@db:5432/app?sslmode=disable", None),
        ("postgres://app@db/app", None),
        ("POSTGRESQL://app@db/app", None),
    ],
)
def test_connection_strings_map_to_store_urls(given: str, url: str | None) -> None:
    assert store_url(given) == (url or given)


def test_a_path_object_is_a_sqlite_path(tmp_path: Path) -> None:
    assert store_url(tmp_path / "x.db") == f"sqlite:///{tmp_path}/x.db"


def test_libpq_keywords_become_a_url_libpq_reads_the_same(pg_server_dsn: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    url = store_url("host=127.0.0.1 port=5432 dbname=test user=root options='-c x=1'")
    assert url.startswith("postgresql://?")
    assert conninfo_to_dict(url) == {
        "host": "127.0.0.1",
        "port": "5432",
        "dbname": "test",
        "user": "root",
        "options": "-c x=1",
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("", "empty"),
        ("odd?name.db", "contains '\\?' or '#'"),
        ("host=db nosuchkeyword=1", "bad PostgreSQL connection string"),
    ],
)
def test_bad_connection_strings_are_refused(given: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        store_url(given)


def test_from_conn_string_takes_a_sqlite_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with AgentckptSaver.from_conn_string("checkpoints.sqlite") as saver:
        graph_on(saver).invoke({"messages": [HumanMessage("hi")]}, CONFIG)  # type: ignore[attr-defined]
    assert (tmp_path / "checkpoints.sqlite").is_file()
    with Store.connect("sqlite:///checkpoints.sqlite") as store:
        assert len(store.steps(AgentckptSaver.run_id("t"))) == 3


def test_from_conn_string_in_memory_keeps_checkpoints_while_open() -> None:
    with AgentckptSaver.from_conn_string(":memory:") as saver:
        graph = graph_on(saver)
        graph.invoke({"messages": [HumanMessage("hi")]}, CONFIG)  # type: ignore[attr-defined]
        graph.invoke({"messages": [HumanMessage("again")]}, CONFIG)  # type: ignore[attr-defined]
        assert len(graph.get_state(CONFIG).values["messages"]) == 4  # type: ignore[attr-defined]


def test_from_conn_string_takes_a_postgres_url(pg_url: str) -> None:
    with AgentckptSaver.from_conn_string(pg_url) as saver:
        graph_on(saver).invoke({"messages": [HumanMessage("hi")]}, CONFIG)  # type: ignore[attr-defined]
    with AgentckptSaver.from_url(pg_url) as again:
        assert again.get_tuple(CONFIG) is not None


def test_async_with_from_conn_string_opens_the_async_store(url: str) -> None:
    async def run() -> int:
        async with AgentckptSaver.from_conn_string(url) as saver:
            graph = graph_on(saver)
            await graph.ainvoke({"messages": [HumanMessage("hi")]}, CONFIG)  # type: ignore[attr-defined]
            state = await graph.aget_state(CONFIG)  # type: ignore[attr-defined]
            return len(state.values["messages"])

    assert asyncio.run(run()) == 2
    with AgentckptSaver.from_url(url) as saver:
        assert len(list(saver.list(CONFIG))) == 3


def test_one_from_conn_string_is_entered_once(tmp_path: Path) -> None:
    opening = AgentckptSaver.from_conn_string(str(tmp_path / "a.db"))
    with opening, pytest.raises(ConfigurationError, match="entered already"), opening:
        pass
