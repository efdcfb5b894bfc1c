"""The OpenAI Agents SDK session on SQLite and PostgreSQL, driven by a real Runner."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

pytest.importorskip(
    "agents",
    reason="the OpenAI Agents SDK is not installed: pip install 'agentckpt[openai-agents]'",
)

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session, SessionSettings
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agentckpt import InvalidValueError, Store
from agentckpt.integrations.openai_agents import AgentckptSession, session_run_id
from tests.support.dbsql import run_sql

T = TypeVar("T")

set_tracing_disabled(True)  # no trace export: these tests never touch the network

ITEMS: list[Any] = [
    {"role": "user", "content": "naïve ☃ 𝄞 \u0000 and the text \\u0000"},
    {"z": 1, "a": {"y": None, "b": [1, 1.0, True, -0.0, 2**70]}, "m": {}},
    {"type": "message", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
]


class CannedModel(Model):
    """A local model that answers with canned texts and records what it was sent."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.inputs: list[Any] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append(input)
        text = self.replies.pop(0)
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
            role="assistant",
            status="completed",
            type="message",
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests do not stream")


def in_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a new thread (so with its own event loop) and close that loop after."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # re-raised below
            errors.append(exc)
        finally:
            # Runner.run_sync leaves the thread's default loop open for reuse; close it.
            loop = asyncio.get_event_loop_policy().get_event_loop()
            loop.close()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return result[0]


@pytest.fixture
def session(url: str) -> Any:
    with AgentckptSession("s-1", url=url) as opened:
        yield opened


def test_it_is_an_agents_sdk_session(session: AgentckptSession) -> None:
    assert isinstance(session, Session)
    assert session.session_id == "s-1"


async def test_items_round_trip_exactly(session: AgentckptSession) -> None:
    await session.add_items(ITEMS[:2])
    await session.add_items(ITEMS[2:])

    got = await session.get_items()

    assert [repr(item) for item in got] == [repr(item) for item in ITEMS]
    assert list(got[1]) == ["z", "a", "m"]


async def test_limits_pop_and_clear(url: str) -> None:
    with AgentckptSession("limits", url=url, session_settings=SessionSettings(limit=2)) as s:
        assert await s.pop_item() is None
        await s.add_items([{"n": i} for i in range(5)])
        assert await s.get_items() == [{"n": 3}, {"n": 4}]  # the settings' limit
        assert await s.get_items(limit=3) == [{"n": 2}, {"n": 3}, {"n": 4}]
        assert await s.get_items(limit=0) == []
        assert len(await s.get_items(limit=-1)) == 5  # as the SDK's SQLite session
        assert await s.pop_item() == {"n": 4}
        assert await s.get_items(limit=10) == [{"n": i} for i in range(4)]
        await s.clear_session()
        assert await s.get_items(limit=10) == []
        await s.add_items([{"after": "clear"}])
        assert await s.get_items(limit=10) == [{"after": "clear"}]
    with AgentckptSession("limits", url=url, session_settings={"limit": 1}) as s:
        await s.add_items([{"n": "last"}])
        assert await s.get_items() == [{"n": "last"}]


async def test_values_that_cannot_round_trip_are_refused(
    session: AgentckptSession, url: str
) -> None:
    with pytest.raises(InvalidValueError) as caught:
        await session.add_items([{"ok": 1}, {"bad": ("a", "tuple")}])
    assert caught.value.path == "/items/1/bad"
    assert await session.get_items() == []
    assert run_sql(url, "SELECT count(*) FROM steps") == [(0,)]


@pytest.mark.parametrize(
    ("items", "path"),
    [
        ({"role": "user", "content": "hi"}, "/items"),  # was stored as the item "role"
        ("hello", "/items"),  # was stored as five one-letter items
        ([{"role": "user", "content": "hi"}, "hello"], "/items/1"),
        ([{"ok": 1}, ["not", "an", "item"]], "/items/1"),
    ],
)
async def test_items_that_are_not_a_list_of_objects_are_refused(
    session: AgentckptSession, url: str, items: Any, path: str
) -> None:
    with pytest.raises(InvalidValueError) as caught:
        await session.add_items(items)
    assert caught.value.path == path
    assert await session.get_items() == []
    assert run_sql(url, "SELECT count(*) FROM steps") == [(0,)]


async def test_a_limit_that_is_not_an_int_is_refused(session: AgentckptSession) -> None:
    await session.add_items([{"n": 1}])
    for bad in ("1", 1.5, True):
        with pytest.raises(InvalidValueError, match="limit must be an int or None"):
            await session.get_items(limit=bad)  # type: ignore[arg-type]
    assert await session.get_items(limit=1) == [{"n": 1}]


async def test_each_add_is_a_small_delta_and_old_steps_are_pruned(
    session: AgentckptSession, url: str
) -> None:
    for i in range(60):
        await session.add_items([{"role": "user", "content": f"message {i} " + "padding " * 20}])

    rid = str(session_run_id("s-1"))
    rows = run_sql(url, "SELECT kind, raw_bytes, state_bytes FROM steps WHERE run_id = ?", rid)
    deltas = [raw for kind, raw, _ in rows if kind == "delta"]
    assert len(rows) <= 21  # a snapshot every 20 steps deletes the older ones
    assert max(deltas) < 300  # one item, not the history
    assert max(state for _, _, state in rows) > 60 * 150
    assert len(await session.get_items()) == 60


def test_runner_run_sync_twice_on_one_session(url: str) -> None:
    model = CannedModel(["Hello Ada!", "You are Ada."])
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    with AgentckptSession("chat", url=url) as session:
        # Each call on its own thread: a different event loop every time.
        first = in_thread(lambda: Runner.run_sync(agent, "My name is Ada.", session=session))
        second = in_thread(lambda: Runner.run_sync(agent, "Who am I?", session=session))
        items = asyncio.run(session.get_items())

    assert (first.final_output, second.final_output) == ("Hello Ada!", "You are Ada.")
    # The second call's model input held the first turn, read back from the store.
    assert [i.get("content") for i in model.inputs[1][:1]] == ["My name is Ada."]
    assert model.inputs[1][1]["content"][0]["text"] == "Hello Ada!"
    assert [i["role"] for i in items] == ["user", "assistant", "user", "assistant"]
    assert items[3]["content"][0]["text"] == "You are Ada."
    # A new process (here: a new store) sees the same history.
    with AgentckptSession("chat", url=url) as again:
        assert asyncio.run(again.get_items()) == items


def test_many_threads_share_one_session(session: AgentckptSession) -> None:
    def writer(n: int) -> None:
        for i in range(10):
            asyncio.run(session.add_items([{"writer": n, "i": i}]))

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    items = asyncio.run(session.get_items())
    assert len(items) == 60
    for n in range(6):
        assert [item["i"] for item in items if item["writer"] == n] == list(range(10))


async def test_writers_with_separate_stores_never_lose_an_item(url: str) -> None:
    # Two stores stand for two processes: each one's cached view goes stale in turn.
    one, two = Store.connect(url), Store.connect(url)
    try:
        a = AgentckptSession("shared", store=one)
        b = AgentckptSession("shared", store=two)
        for i in range(10):
            await (a if i % 2 else b).add_items([{"i": i}])
        assert await a.pop_item() == {"i": 9}
        await b.add_items([{"i": 10}])
        assert await a.get_items() == [{"i": i} for i in (*range(9), 10)]
        a.close()  # a session does not close a store it was given
        assert await b.get_items(limit=1) == [{"i": 10}]
    finally:
        one.close()
        two.close()
