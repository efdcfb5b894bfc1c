"""Reliability row 21, size limits: ``Limits.max_bytes`` has a ceiling the backends can
hold, and bounds each value the run loop or the conversation API moves to a blob.

A value over the limit is an :class:`InvalidValueError` naming its JSON path, raised
before anything is written: no blob (in the database or in a blob store outside it), no
step. On SQLite and PostgreSQL, sync and async. The behaviour is shown with a lowered
limit (1 MiB); one test per backend shows the default (64 MiB) holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentckpt import AsyncStore, ConfigurationError, InvalidValueError, Limits, Store
from agentckpt._core.codec import MAX_SUPPORTED_BYTES, encode
from agentckpt.conversation import Message, ToolCall
from agentckpt.runs import Artifact, LocalBlobStore
from agentckpt.store.arguments import MAX_COMMIT_BYTES
from tests.integration.conversation.conftest import api, clock, make_conversations
from tests.integration.runs.conftest import Runs, flavor, runs
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql

__all__ = ["api", "clock", "flavor", "make_conversations", "runs"]  # fixtures used here

LIMIT = 1024 * 1024
DEFAULT = Limits().max_bytes


# -- the ceiling ----------------------------------------------------------------------------


def test_max_bytes_up_to_the_ceiling_is_accepted() -> None:
    assert MAX_SUPPORTED_BYTES == 256 * 1024 * 1024
    assert Limits(max_bytes=MAX_SUPPORTED_BYTES).max_bytes == MAX_SUPPORTED_BYTES
    assert DEFAULT <= MAX_SUPPORTED_BYTES


@pytest.mark.parametrize("value", [MAX_SUPPORTED_BYTES + 1, 2**30, 1_100 * 2**20, 2**63])
def test_max_bytes_past_the_ceiling_is_a_configuration_error(value: int) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Limits(max_bytes=value)
    message = str(raised.value)
    assert "Limits.max_bytes" in message
    assert repr(value) in message
    assert str(MAX_SUPPORTED_BYTES) in message


@pytest.mark.parametrize("value", [0, -1, 1.5, "64MiB", True])
def test_max_bytes_of_a_wrong_value_is_a_configuration_error(value: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"Limits\.max_bytes"):
        Limits(max_bytes=value)


# -- the run loop ---------------------------------------------------------------------------


def limited_store(runs: Runs, limit: int = LIMIT) -> Any:
    """A store of the run loop's flavor on the test's database with ``max_bytes=limit``,
    closed with the fixture."""
    limits = Limits(max_bytes=limit)
    store: Any
    if runs.flavor == "sync":
        store = Store.connect(runs.url, limits=limits)
    else:
        store = runs.loop.run_until_complete(AsyncStore.connect(runs.url, limits=limits))
    runs._closers.append(lambda: runs.do(store.close()))
    return store


def files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# (id, value one byte over LIMIT, the JSON path below its key "v")
OVER: list[tuple[str, Any, str]] = [
    ("str", "x" * (LIMIT + 1), ""),
    ("str-multibyte", "\u00e9" * (LIMIT // 2) + "x", ""),  # LIMIT + 1 bytes of UTF-8
    ("bytes", b"\x00" * (LIMIT + 1), ""),
    ("bytearray", bytearray(LIMIT + 1), ""),
    ("artifact", [Artifact(b"\x01" * (LIMIT + 1), "application/octet-stream")], "/0"),
    ("artifact-text", {"doc": Artifact("y" * (LIMIT + 1))}, "/doc"),
]
OVER_PARAMS = [pytest.param(value, below, id=name) for name, value, below in OVER]


@pytest.mark.parametrize(("value", "below"), OVER_PARAMS)
def test_run_loop_refuses_a_blob_over_the_limit_before_writing(
    runs: Runs, value: Any, below: str
) -> None:
    store = limited_store(runs)
    run = runs.agent_run(agent_id="big", name="initial", store=store, initial_state={"v": value})
    with pytest.raises(InvalidValueError) as raised:
        run.run(lambda ctx: ctx.state, max_steps=1)
    assert raised.value.path == "/v" + below
    assert f"over the limit of {LIMIT} bytes" in str(raised.value)
    assert "Limits.max_bytes" in str(raised.value)
    assert f"{LIMIT + 1} bytes" in str(raised.value)
    assert runs.sql("SELECT count(*) FROM steps") == [(0,)]
    assert runs.sql("SELECT count(*) FROM blobs") == [(0,)]


def test_run_loop_refuses_a_blob_over_the_limit_in_a_later_step_and_keeps_the_run(
    runs: Runs, tmp_path: Path
) -> None:
    """Through a blob store outside the database: the refused value never reaches it,
    the steps before it stand, and the next valid step commits."""
    store = limited_store(runs)
    blobs = LocalBlobStore(tmp_path / "blobs")
    kept = "k" * (100 * 1024)  # over the offload threshold, under the limit: a blob

    def step(ctx: Any) -> Any:
        if ctx.step == 1:
            ctx.state["docs"] = [kept]
        elif ctx.step == 2:
            ctx.state["docs"].append("z" * (LIMIT + 1))
        return ctx.state

    run = runs.agent_run(
        agent_id="big", name="later", store=store, blobs=blobs, initial_state={"docs": []}
    )
    with pytest.raises(InvalidValueError) as raised:
        run.run(step, max_steps=3)
    assert raised.value.path == "/docs/1"
    stored = files_in(tmp_path / "blobs")
    assert len(stored) == 1  # the 100 KiB document's blob only
    assert runs.sql("SELECT max(step) FROM steps") == [(1,)]
    with Store.connect(runs.url) as fresh:
        latest = fresh.latest(run.run_id)
    assert latest is not None
    assert latest.step == 1
    assert run.load(latest.state["docs"][0]) == kept

    def smaller(ctx: Any) -> Any:
        ctx.state["docs"].append("s" * 10)
        return ctx.state

    runs.check.set_status(run.run_id, "active")  # a refused step marks the run failed
    again = runs.agent_run(agent_id="big", name="later", store=store, blobs=blobs)
    again.run(smaller, max_steps=2)
    assert runs.sql("SELECT max(step) FROM steps") == [(2,)]
    assert files_in(tmp_path / "blobs") == stored


def test_run_loop_stores_a_blob_of_exactly_the_limit(runs: Runs) -> None:
    store = limited_store(runs)
    at_limit = "\u00e9" * (LIMIT // 2)  # LIMIT bytes of UTF-8, half as many characters
    raw = b"\xff" * LIMIT
    run = runs.agent_run(
        agent_id="big", name="at", store=store, initial_state={"text": at_limit, "raw": raw}
    )
    run.run(lambda ctx: ctx.state, max_steps=1)
    sizes = runs.sql("SELECT size FROM blobs ORDER BY size")
    assert sizes == [(LIMIT,), (LIMIT,)]
    with Store.connect(runs.url) as fresh:
        latest = fresh.latest(run.run_id)
    assert latest is not None
    assert run.load(latest.state["text"]) == at_limit
    assert run.load(latest.state["raw"]) == raw


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_default_limit_bounds_a_blob_of_the_run_loop(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """At the real default (64 MiB): one byte over is refused before anything is
    written (a 300 MiB string went to a blob before); exactly 64 MiB is stored."""
    url = str(request.getfixturevalue(f"{'sqlite' if backend == 'sqlite' else 'pg'}_url"))
    made = Runs("sync", url)
    try:
        run = made.agent_run(agent_id="big", name="default", initial_state={"doc": "x"})

        def grow(ctx: Any) -> Any:
            ctx.state["doc"] = "x" * (DEFAULT + 1)
            return ctx.state

        with pytest.raises(InvalidValueError) as raised:
            run.run(grow, max_steps=2)
        assert raised.value.path == "/doc"
        assert f"{DEFAULT + 1} bytes, over the limit of 67108864 bytes" in str(raised.value)
        assert made.sql("SELECT count(*) FROM steps") == [(1,)]  # the initial state
        assert made.sql("SELECT count(*) FROM blobs") == [(0,)]

        def at_default(ctx: Any) -> Any:
            ctx.state["doc"] = "y" * DEFAULT
            return ctx.state

        made.check.set_status(run.run_id, "active")  # a refused step marks it failed
        again = made.agent_run(agent_id="big", name="default")
        again.run(at_default, max_steps=1)
        assert made.sql("SELECT size FROM blobs") == [(DEFAULT,)]
        with Store.connect(url) as fresh:
            latest = fresh.latest(run.run_id)
        assert latest is not None
        assert latest.step == 1
        assert again.load(latest.state["doc"]) == "y" * DEFAULT
    finally:
        made.close()


# -- the conversation API -------------------------------------------------------------------


def limited(make_conversations: Any, limit: int = LIMIT) -> Any:
    return make_conversations(store_options={"limits": Limits(max_bytes=limit)})


def a_call_in_a_turn(conversations: Any) -> tuple[Any, Any]:
    conv = conversations.start(agent_id="big", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("q1", timestamp="T")
    conv.stream("looking")
    return conv, conv.start_tool_call("search_web", {"q": "everything"})


def counts(url: str) -> list[tuple[Any, ...]]:
    return run_sql(url, "SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM blobs)")


def test_conversation_refuses_a_tool_result_over_the_limit_before_writing(
    make_conversations: Any,
) -> None:
    conv, call = a_call_in_a_turn(limited(make_conversations))
    url = make_conversations.url
    before = counts(url)
    too_big = "x" * (LIMIT - 1)  # its JSON encoding, quoted, is LIMIT + 1 bytes
    with pytest.raises(InvalidValueError) as raised:
        conv.finish_tool_call(call, too_big, duration_ms=5)
    assert raised.value.path == "/conversation/1/tool_calls/0/result"
    assert f"{LIMIT + 1} bytes, over the limit of {LIMIT} bytes" in str(raised.value)
    assert counts(url) == before
    assert not call.has_result
    # The handle goes on: a result within the limit is stored (a blob) and reads back.
    conv.finish_tool_call(call, "x" * (LIMIT - 2), duration_ms=5)
    conv.complete_turn()
    assert run_sql(url, "SELECT size FROM blobs") == [(LIMIT,)]
    fresh = make_conversations()
    recovered = fresh.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    stored = recovered.messages[1].tool_calls[0]
    assert stored.result_ref is not None
    assert fresh.load_result(conv.conversation_id, stored) == "x" * (LIMIT - 2)


def test_conversation_refuses_an_added_message_with_a_result_over_the_limit(
    make_conversations: Any,
) -> None:
    conversations = limited(make_conversations)
    conv = conversations.start(agent_id="big", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("q1", timestamp="T")
    url = make_conversations.url
    before = counts(url)
    big = {"rows": ["r" * 1000] * (LIMIT // 1000)}
    assert len(encode(big)) > LIMIT
    calls = [ToolCall("get_weather", {}, result=1), ToolCall("search_web", {}, result=big)]
    with pytest.raises(InvalidValueError) as raised:
        conv.add_assistant_message("found", tool_calls=calls)
    assert raised.value.path == "/conversation/1/tool_calls/1/result"
    assert "Limits.max_bytes" in str(raised.value)
    with pytest.raises(InvalidValueError) as raised:
        conv.add_message(Message("assistant", "found", tool_calls=[calls[1]]))
    assert raised.value.path == "/conversation/1/tool_calls/0/result"
    assert counts(url) == before
    assert conv.turn_open
    assert [m.content for m in conv.state.conversation] == ["q1"]
    # The handle is as it was: the turn completes, with the messages it had.
    assert conv.add_assistant_message("found nothing") is not None
    assert not conv.turn_open
    assert [m.content for m in conv.state.conversation] == ["q1", "found nothing"]


def test_conversation_names_the_result_path_for_a_bad_value_in_a_large_result(
    make_conversations: Any,
) -> None:
    """A value the codec refuses inside a result that goes to a blob is named by its
    path in the state, not inside the result."""
    conv, call = a_call_in_a_turn(make_conversations())
    bad = {"rows": ["row " * 10] * 500, "score": float("nan")}
    with pytest.raises(InvalidValueError) as raised:
        conv.finish_tool_call(call, bad)
    assert raised.value.path == "/conversation/1/tool_calls/0/result/score"


# -- a commit's blobs, as a whole -----------------------------------------------------------


@pytest.fixture(scope="module")
def three_large_blobs() -> list[Any]:
    """Three incompressible 180 MiB blobs (each under the 256 MiB ceiling, 540 MiB in
    all, past the 512 MiB a commit carries), prepared once for the module."""
    chunk = os.urandom(180 * 1024 * 1024)
    return [Store.prepare_blob(bytes([n]) + chunk[1:])[1] for n in range(3)]


def test_a_commit_whose_blobs_pass_what_one_commit_carries_is_refused_before_sending(
    make_store: Any, three_large_blobs: list[Any]
) -> None:
    """Five 220 MiB blobs in one commit made PostgreSQL drop the connection, an
    OutcomeUnknownError that a retry met again; now one InvalidValueError, nothing
    written, and the store goes on."""
    # A 180 MiB blob's commit below takes seconds of a loaded machine's disk; the test
    # is about the size bound, not the deadline (15 s by default, once passed in CI).
    slow_disk = {} if make_store.url.startswith("sqlite") else {"deadline": 120.0}
    store = make_store(limits=Limits(max_bytes=MAX_SUPPORTED_BYTES), **slow_disk)
    run = store.create_run()
    store.commit(run.run_id, {"n": 0})
    with pytest.raises(InvalidValueError) as raised:
        store.commit(run.run_id, {"n": 1}, blobs=three_large_blobs)
    message = str(raised.value)
    assert f"over the {MAX_COMMIT_BYTES} bytes one commit can carry" in message
    assert "3 blob(s)" in message
    assert run_sql(make_store.url, "SELECT count(*) FROM blobs") == [(0,)]
    assert store.latest(run.run_id).step == 1
    store.commit(run.run_id, {"n": 1}, blobs=three_large_blobs[:1])
    assert store.latest(run.run_id).state == {"n": 1}
    assert run_sql(make_store.url, "SELECT count(*) FROM blobs") == [(1,)]


def test_a_commit_with_a_prepared_blob_over_the_limit_is_refused(make_store: Any) -> None:
    store = make_store(limits=Limits(max_bytes=LIMIT))
    run = store.create_run()
    ref, row = Store.prepare_blob(b"x" * (LIMIT + 1))
    with pytest.raises(InvalidValueError, match=rf"is {LIMIT + 1} bytes, over the limit"):
        store.commit(run.run_id, {"doc": ref.to_json()}, blobs=[row])
    assert store.latest(run.run_id) is None
    assert run_sql(make_store.url, "SELECT count(*) FROM blobs") == [(0,)]
    _, fits = Store.prepare_blob(b"x" * LIMIT)
    assert store.commit(run.run_id, {"n": 1}, blobs=[fits]).step == 1


def test_put_blob_over_the_limit_is_refused(make_store: Any) -> None:
    store = make_store(limits=Limits(max_bytes=LIMIT))
    run = store.create_run()
    with pytest.raises(InvalidValueError, match=rf"blob of {LIMIT + 1} bytes, over the limit"):
        store.put_blob(run.run_id, b"x" * (LIMIT + 1))
    assert run_sql(make_store.url, "SELECT count(*) FROM blobs") == [(0,)]
    ref = store.put_blob(run.run_id, b"x" * LIMIT)
    assert store.get_blob(run.run_id, ref) == b"x" * LIMIT
