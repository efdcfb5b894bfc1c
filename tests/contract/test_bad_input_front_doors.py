"""Bad inputs through the front doors above the store (reliability rows 16-22).

The store's own refusals are in ``test_bad_input.py``. Here the same values go through
the run loop (``AgentRun``/``AsyncAgentRun``), the conversation API (sync and async), and
the OpenAI Agents SDK session, on SQLite and PostgreSQL: each is refused with an
:class:`InvalidValueError` naming its JSON path before anything is written, and what was
stored before reads back unchanged from a fresh store; values JSON can carry exactly
(U+0000 in text and keys, the literal text ``\\u0000``, key order) round-trip instead.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from agentckpt import InvalidValueError, Store
from tests.integration.conversation.conftest import api, clock, make_conversations
from tests.integration.runs.conftest import Runs, flavor, runs
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql

__all__ = ["api", "clock", "flavor", "make_conversations", "runs"]  # fixtures used here


def nest(levels: int) -> list[Any]:
    """A list nested ``levels`` containers deep (``[]`` is 1 level)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


# (id, bad value, words the message must contain). Each goes in as the value of a key
# ``v`` one level below the root, so the JSON path named starts with "/v".
BAD: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("nan", lambda: float("nan"), ["nan", "not valid JSON"]),
    ("inf", lambda: float("inf"), ["inf", "not valid JSON"]),
    ("-inf", lambda: float("-inf"), ["-inf", "not valid JSON"]),
    ("1e400", lambda: 1e400, ["inf"]),  # the literal is an infinity in Python
    ("lone-surrogate", lambda: "a \ud800 b", ["lone surrogate U+D800"]),
    ("lone-surrogate-key", lambda: {"k\udc00": 1}, ["dict key", "lone surrogate U+DC00"]),
    ("10**5000", lambda: 10**5000, ["4300 decimal digits"]),
    ("depth-500", lambda: nest(500), ["deeper than the limit of 200"]),
    ("depth-1000", lambda: nest(1000), ["deeper than the limit of 200"]),
    ("depth-5000", lambda: nest(5000), ["deeper than the limit of 200"]),
    ("depth-20000", lambda: nest(20000), ["deeper than the limit of 200"]),
]
BAD_PARAMS = [pytest.param(build, words, id=name) for name, build, words in BAD]

# Values that look dangerous and must come back exactly as given.
EXACT: dict[str, Any] = {
    "nul": "before\x00after",
    "escaped-nul-text": "\\u0000 stays six characters",
    "nul-key": {"k\x00": 1, "\\u0000": 2},
    "key-order": {"z": 1, "a": 2, "m": {"b": 1, "a": 2}},
    "big-int": 2**200,
    "negative-zero": -0.0,
}


def same(a: Any, b: Any) -> bool:
    """Equal as stored: key order, -0.0 and int/float told apart."""
    return json.dumps(a) == json.dumps(b) and repr(a) == repr(b)


# -- the run loop -------------------------------------------------------------------------


@pytest.mark.parametrize(("build", "words"), BAD_PARAMS)
def test_run_loop_refuses_a_bad_initial_state_before_writing(
    runs: Runs, build: Callable[[], Any], words: list[str]
) -> None:
    run = runs.agent_run(agent_id="bad", name="initial", initial_state={"v": build()})
    with pytest.raises(InvalidValueError) as raised:
        run.run(lambda ctx: ctx.state, max_steps=1)
    assert raised.value.path.startswith("/v"), raised.value.path
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))
    # Nothing of the run reached the database: no step, and the run row holds no state.
    assert runs.sql("SELECT count(*) FROM steps") == [(0,)]


@pytest.mark.parametrize(("build", "words"), BAD_PARAMS)
def test_run_loop_refuses_a_bad_step_and_keeps_what_was_committed(
    runs: Runs, build: Callable[[], Any], words: list[str]
) -> None:
    def step(ctx: Any) -> Any:
        if ctx.step <= 2:
            ctx.state["n"] += 1
        else:  # the third step returns a state that cannot be stored
            ctx.state["v"] = build()
        return ctx.state

    run = runs.agent_run(agent_id="bad", name="step", initial_state={"n": 0})
    with pytest.raises(InvalidValueError) as raised:
        run.run(step, max_steps=5)
    assert raised.value.path.startswith("/v"), raised.value.path
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))
    with Store.connect(runs.url) as fresh:  # read back from the database, not a cache
        after = fresh.latest(run.run_id)
        assert after is not None
        assert (after.step, after.state) == (2, {"n": 2})


def test_run_loop_round_trips_exact_values(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        ctx.state[f"s{ctx.step}"] = EXACT
        return ctx.state

    run = runs.agent_run(agent_id="exact", name="values", initial_state=dict(EXACT))
    assert run.run(step, max_steps=2).status == "completed"
    with Store.connect(runs.url) as fresh:
        latest = fresh.latest(run.run_id)
    assert latest is not None
    assert same(latest.state, {**EXACT, "s1": EXACT, "s2": EXACT})


@pytest.mark.parametrize("name", ["nul\x00name", "lone \ud800"])
def test_run_loop_refuses_a_bad_run_name_before_writing(runs: Runs, name: str) -> None:
    """A run name holding U+0000 was stored on SQLite and, on PostgreSQL, failed with a
    StoreError after the run was created (the name goes into the lease owner)."""
    with pytest.raises(InvalidValueError) as raised:
        runs.agent_run(agent_id="a", name=name, initial_state={})
    assert repr(name) in str(raised.value)
    assert runs.sql("SELECT count(*) FROM runs") == [(0,)]


# -- the conversation API -----------------------------------------------------------------


def start(conversations: Any, **options: Any) -> Any:
    return conversations.start(agent_id="weather", agent_config=CONFIG, tools=TOOLS, **options)


def recovered(url: str, conversation_id: Any) -> Any:
    """The conversation read back by a fresh store and API."""
    from agentckpt.conversation import Conversations

    with Store.connect(url) as fresh:
        return Conversations(fresh).recover(conversation_id, agent_config=CONFIG, tools=TOOLS)


@pytest.mark.parametrize(("build", "words"), BAD_PARAMS)
def test_conversation_refuses_bad_content_and_keeps_what_was_committed(
    make_conversations: Any, build: Callable[[], Any], words: list[str]
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    conv.add_user_message("q1")
    conv.add_assistant_message("a1")
    before = recovered(make_conversations.url, conv.conversation_id)
    steps = run_sql(make_conversations.url, "SELECT count(*) FROM steps")

    for refused in (
        lambda: conv.add_user_message({"v": build()}),
        lambda: conv.add_user_message("q2", extra={"v": build()}),
    ):
        with pytest.raises(InvalidValueError) as raised:
            refused()
        assert "/v" in raised.value.path, raised.value.path
        for word in words:
            assert word in str(raised.value), (word, str(raised.value))

    assert run_sql(make_conversations.url, "SELECT count(*) FROM steps") == steps
    after = recovered(make_conversations.url, conv.conversation_id)
    assert (after.step, after.messages) == (before.step, before.messages)
    conv.add_user_message("q2")  # the handle is still usable
    assert recovered(make_conversations.url, conv.conversation_id).messages[-1].content == "q2"


@pytest.mark.parametrize(("build", "words"), BAD_PARAMS)
def test_conversation_refuses_a_bad_start_before_writing(
    make_conversations: Any, build: Callable[[], Any], words: list[str]
) -> None:
    conversations = make_conversations()
    with pytest.raises(InvalidValueError) as raised:
        conversations.start(agent_id="weather", agent_config={**CONFIG, "v": build()}, tools=TOOLS)
    assert "/v" in raised.value.path, raised.value.path
    assert run_sql(make_conversations.url, "SELECT count(*) FROM runs") == [(0,)]


def test_conversation_round_trips_exact_values(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = start(conversations, metadata={"user_id": "u\x00", "extra": dict(EXACT)})
    conv.add_user_message("hi \x00 there \\u0000", extra=dict(EXACT))
    conv.add_assistant_message(dict(EXACT))
    got = recovered(make_conversations.url, conv.conversation_id)
    assert [m.content for m in got.messages] == ["hi \x00 there \\u0000", EXACT]
    assert same(got.messages[1].content, EXACT)
    assert same(got.messages[0].extra, EXACT)


@pytest.mark.parametrize("agent_id", ["w\x00", "w\ud800"])
def test_conversation_refuses_a_bad_agent_id_before_writing(
    make_conversations: Any, agent_id: str
) -> None:
    conversations = make_conversations()
    with pytest.raises(InvalidValueError) as raised:
        conversations.start(agent_id=agent_id, agent_config=CONFIG, tools=TOOLS)
    assert repr(agent_id) in str(raised.value)
    assert run_sql(make_conversations.url, "SELECT count(*) FROM runs") == [(0,)]


# -- the OpenAI Agents SDK session ---------------------------------------------------------


def session_calls(url: str, body: Callable[[Any], Any]) -> Any:
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents import AgentckptSession

    async def go() -> Any:
        with AgentckptSession("s-bad", url=url) as session:
            return await body(session)

    return asyncio.run(go())


@pytest.mark.parametrize(("build", "words"), BAD_PARAMS)
def test_session_refuses_bad_items_and_keeps_what_was_added(
    url: str, build: Callable[[], Any], words: list[str]
) -> None:
    async def body(session: Any) -> Any:
        await session.add_items([{"role": "user", "content": "kept"}])
        with pytest.raises(InvalidValueError) as raised:
            await session.add_items([{"ok": 1}, {"v": build()}])
        return raised.value

    error = session_calls(url, body)
    assert error.path.startswith("/items/1/v"), error.path
    for word in words:
        assert word in str(error), (word, str(error))

    async def read(session: Any) -> Any:
        return await session.get_items()

    assert session_calls(url, read) == [{"role": "user", "content": "kept"}]


def test_session_round_trips_exact_values(url: str) -> None:
    items = [{"role": "user", "content": "a\x00b \\u0000"}, dict(EXACT)]

    async def add(session: Any) -> Any:
        await session.add_items(items)

    async def read(session: Any) -> Any:
        return await session.get_items()

    session_calls(url, add)
    got = session_calls(url, read)
    assert same(got, items)


def test_session_refuses_a_lone_surrogate_session_id(url: str) -> None:
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents import AgentckptSession

    with pytest.raises(InvalidValueError):
        AgentckptSession("s\ud800", url=url)


# -- the store's default size limit ---------------------------------------------------------


def test_the_default_size_limit_is_enforced_before_sending(make_store: Any, url: str) -> None:
    """Row 21 at the default ``Limits.max_bytes`` (64 MiB), not a lowered one: refused
    whole before anything is sent, so the connection is never dropped by the server."""
    store = make_store()
    run = store.create_run()
    store.commit(run.run_id, {"v": 1})
    with pytest.raises(InvalidValueError) as raised:
        store.commit(run.run_id, {"v": "x" * (64 * 2**20)})
    assert "over the limit of 67108864 bytes (Limits.max_bytes)" in str(raised.value)
    assert run_sql(url, "SELECT count(*) FROM steps") == [(1,)]
    assert store.commit(run.run_id, {"v": 2}).step == 2  # the same store goes on
