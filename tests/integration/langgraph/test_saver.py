"""The LangGraph saver beyond the conformance suite: storage, exactness, graphs, failures.

Each test runs on a fresh SQLite file and a fresh PostgreSQL schema (``url``).
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, MessagesState, StateGraph

from agentckpt import ConfigurationError, CorruptDataError, SnapshotPolicy, Store
from agentckpt.integrations.langgraph import (
    AgentckptSaver,
    DeltaChannelPruneError,
    PruneStrategyError,
)
from tests.support.dbsql import run_sql


def config(thread: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def put(
    saver: AgentckptSaver,
    thread: str,
    values: dict[str, Any] | None = None,
    *,
    parent: dict[str, Any] | None = None,
    ns: str = "",
    **metadata: Any,
) -> dict[str, Any]:
    """Put a checkpoint holding ``values``; returns its config."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values or {})
    checkpoint["channel_versions"] = {k: 1 for k in checkpoint["channel_values"]}
    cfg = config(thread, ns)
    if parent is not None:
        cfg["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    meta = {"source": "loop", "step": 0, "parents": {}, **metadata}
    return saver.put(cfg, checkpoint, meta, checkpoint["channel_versions"])  # type: ignore[arg-type]


def chat_graph(saver: AgentckptSaver) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1].content
        return {"messages": [AIMessage(f"You said: {last}. " + "Noted. " * 20)]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    return builder.compile(checkpointer=saver)


# -- storage ---------------------------------------------------------------------------------


def test_a_growing_message_list_costs_one_message_per_checkpoint(saver: AgentckptSaver) -> None:
    graph = chat_graph(saver)
    cfg = {"configurable": {"thread_id": "chat"}}
    for turn in range(40):
        graph.invoke({"messages": [HumanMessage(f"turn {turn}")]}, cfg)

    steps = saver.store.steps(saver.run_id("chat"))
    assert len(steps) == 120  # three checkpoints a turn, every one kept
    deltas = [s for s in steps if s.kind == "delta"]
    early = max(s.raw_bytes for s in deltas[:12])
    late = max(s.raw_bytes for s in deltas[-12:])
    # The history grew 40-fold; a delta still holds about one message, not the history.
    assert late <= early + 64
    assert steps[-1].state_bytes > 20 * late
    assert len(graph.get_state(cfg).values["messages"]) == 80


def test_large_values_go_to_the_blob_table_once(saver: AgentckptSaver, url: str) -> None:
    big_text = "tool output line\n" * 2000
    big_message = AIMessage("x" * 30_000, id="m1")
    first = put(saver, "t", {"doc": big_text, "messages": [big_message]})
    second = put(saver, "t", {"doc": big_text, "messages": [big_message]}, parent=first)

    rid = AgentckptSaver.run_id("t")
    assert run_sql(url, "SELECT count(*) FROM blobs WHERE run_id = ?", str(rid))[0][0] == 2
    sizes = run_sql(url, "SELECT max(length(payload)) FROM steps WHERE run_id = ?", str(rid))
    assert sizes[0][0] < 2000  # the state holds references, not the values
    for cfg in (first, second):
        values = saver.get_tuple(cfg).checkpoint["channel_values"]  # type: ignore[union-attr]
        assert values["doc"] == big_text
        assert values["messages"] == [big_message]


# -- exactness -------------------------------------------------------------------------------

JSON_VALUES: dict[str, Any] = {
    "unicode": "naïve ☃ 𝄞 \u0000 \\u0000 end",
    "ordered": {"z": 1, "a": {"y": None, "b": [1, 1.0, True, -0.0]}, "m": []},
    "big": 2**80,
    "wrapper_shaped": {"$serde": ["msgpack", "AAAA"]},
    "text_shaped": [{"$text": {"$blob": "sha256:00"}}, {"$serde": 1}],
    "nested_list": [[1, [2, [3]]], {"k": [None]}],
}


def test_json_channel_values_round_trip_exactly(saver: AgentckptSaver) -> None:
    stored = put(saver, "exact", JSON_VALUES)

    values = saver.get_tuple(stored).checkpoint["channel_values"]  # type: ignore[union-attr]

    assert list(values) == list(JSON_VALUES)
    for name, value in JSON_VALUES.items():
        assert repr(values[name]) == repr(value), name
    assert list(values["ordered"]) == ["z", "a", "m"]


def test_values_that_are_not_json_go_through_langgraph_serde(saver: AgentckptSaver) -> None:
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    values = {
        "raw": b"\x00\xffbytes",
        "when": when,
        "messages": [HumanMessage("hi", id="1"), {"role": "tool", "content": "plain"}],
        "nan": float("nan"),
    }
    stored = put(saver, "serde", values)

    got = saver.get_tuple(stored).checkpoint["channel_values"]  # type: ignore[union-attr]

    assert got["raw"] == b"\x00\xffbytes"
    assert got["when"] == when
    assert got["messages"] == [HumanMessage("hi", id="1"), {"role": "tool", "content": "plain"}]
    assert got["nan"] != got["nan"]


def test_metadata_and_writes_round_trip(saver: AgentckptSaver) -> None:
    stored = put(saver, "meta", {}, note="é\u0000", nested={"b": 1, "a": [1.0, 2]})
    saver.put_writes(stored, [("ch", {"z": 1, "a": b"x"}), ("other", None)], "task-1", "p:1")

    got = saver.get_tuple(stored)

    assert got is not None
    assert got.metadata["nested"] == {"b": 1, "a": [1.0, 2]}
    assert list(got.metadata["nested"]) == ["b", "a"]
    assert got.metadata["note"] == "é"  # LangGraph strips U+0000 from metadata strings
    assert got.pending_writes == [("task-1", "ch", {"z": 1, "a": b"x"}), ("task-1", "other", None)]


def test_an_encrypting_serde_stores_nothing_in_clear(url: str) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    class Xor:
        """A stand-in cipher (the test checks placement, not cryptography)."""

        def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
            return "xor", bytes(b ^ 0x5A for b in plaintext)

        def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
            assert ciphername == "xor"
            return bytes(b ^ 0x5A for b in ciphertext)

    serde = EncryptedSerializer(Xor())
    with AgentckptSaver.from_url(url, serde=serde) as saver:
        assert saver.inline_json is False
        stored = put(saver, "secret", {"password": "hunter2-hunter2", "n": [1, 2]}, tag="hunter2")
        got = saver.get_tuple(stored)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"password": "hunter2-hunter2", "n": [1, 2]}
    assert got.metadata["tag"] == "hunter2"
    stored_text = run_sql(url, "SELECT metadata FROM step_index")[0][0]
    assert "hunter2" not in stored_text
    rid = str(AgentckptSaver.run_id("secret"))
    payload = run_sql(url, "SELECT payload FROM steps WHERE run_id = ?", rid)[0][0]
    import zstandard

    raw = bytes(payload)
    raw = zstandard.decompress(raw) if raw[:4] == b"\x28\xb5\x2f\xfd" else raw
    assert b"hunter2" not in raw
    assert b'"n":[1,2]' not in raw


# -- the sync API in detail ------------------------------------------------------------------


def test_list_filters_before_limit_and_scopes(saver: AgentckptSaver) -> None:
    ids = []
    parent = None
    for i in range(5):
        parent = put(
            saver, "L", {"i": i}, parent=parent, step=i, source="loop" if i % 2 else "input"
        )
        ids.append(parent["configurable"]["checkpoint_id"])
    put(saver, "L", {"child": True}, ns="sub:1")
    put(saver, "other", {})

    def listed(cfg: Any, **kw: Any) -> list[str]:
        return [t.checkpoint["id"] for t in saver.list(cfg, **kw)]

    assert listed(config("L")) == ids[::-1]
    assert listed(config("L"), filter={"source": "loop"}) == [ids[3], ids[1]]
    assert listed(config("L"), filter={"source": "loop", "step": 3}) == [ids[3]]
    assert listed(config("L"), filter={"missing": None}) == []
    assert listed(config("L"), before=config("L", checkpoint_id=ids[3])) == [ids[2], ids[1], ids[0]]
    assert listed(config("L"), before=config("L", checkpoint_id=ids[3]), limit=2) == [
        ids[2],
        ids[1],
    ]
    assert listed(config("L"), limit=0) == []
    assert listed(config("L", checkpoint_id=ids[1])) == [ids[1]]
    every_ns = list(saver.list({"configurable": {"thread_id": "L"}}))
    assert {t.config["configurable"]["checkpoint_ns"] for t in every_ns} == {"", "sub:1"}
    assert len(list(saver.list(None))) == 7
    first = saver.get_tuple(config("L", checkpoint_id=ids[1]))
    assert first is not None
    assert first.parent_config == config("L", checkpoint_id=ids[0])


def test_list_pages_through_many_checkpoints(saver: AgentckptSaver) -> None:
    parent = None
    for i in range(150):
        parent = put(saver, "many", {"i": i}, parent=parent, step=i)

    listed = [t.checkpoint["channel_values"]["i"] for t in saver.list(config("many"))]
    every_thread = [t.checkpoint["channel_values"]["i"] for t in saver.list(None)]

    assert listed == list(range(149, -1, -1))
    assert every_thread == listed
    assert len(list(saver.list(config("many"), filter={"source": "loop"}, limit=70))) == 70


def test_copy_prune_and_delete(saver: AgentckptSaver, url: str) -> None:
    parent = None
    for i in range(4):
        parent = put(saver, "src", {"i": i}, parent=parent, step=i, run_id=f"inv-{i % 2}")
    saver.put_writes(parent, [("ch", "w")], "task")  # type: ignore[arg-type]
    put(saver, "src", {"sub": 1}, ns="sub:1")

    saver.copy_thread("src", "dst")
    src_ids = [t.checkpoint["id"] for t in saver.list(config("src"))]
    dst = list(saver.list(config("dst")))
    assert [t.checkpoint["id"] for t in dst] == src_ids
    assert [t.checkpoint["channel_values"] for t in dst] == [{"i": i} for i in (3, 2, 1, 0)]
    assert dst[0].pending_writes == [("task", "ch", "w")]
    assert saver.get_tuple(config("dst", "sub:1")) is not None

    saver.delete_for_runs(["inv-0"])
    assert [t.metadata["run_id"] for t in saver.list(config("src"))] == ["inv-1", "inv-1"]

    saver.prune(["dst"], strategy="keep_latest")
    kept = list(saver.list(config("dst")))
    assert [t.checkpoint["id"] for t in kept] == [src_ids[0]]
    assert kept[0].parent_config is None
    assert kept[0].pending_writes == [("task", "ch", "w")]
    assert kept[0].checkpoint["channel_values"] == {"i": 3}
    rid = str(AgentckptSaver.run_id("dst"))
    assert run_sql(url, "SELECT count(*), min(kind) FROM steps WHERE run_id = ?", rid) == [
        (1, "snapshot")
    ]
    # A new checkpoint on the pruned thread is stored after the kept one.
    put(saver, "dst", {"i": 4}, parent=kept[0].config)
    assert [t.checkpoint["channel_values"] for t in saver.list(config("dst"))] == [
        {"i": 4},
        {"i": 3},
    ]

    saver.prune(["dst"], strategy="delete")
    saver.delete_thread("src")
    assert list(saver.list(None)) == []
    for table in ("runs", "steps", "step_index", "step_writes", "run_threads"):
        assert run_sql(url, f"SELECT count(*) FROM {table}") == [(0,)], table


def test_prune_refuses_delta_channel_threads_and_bad_arguments(saver: AgentckptSaver) -> None:
    put(saver, "plain", {"i": 0})
    put(saver, "plain", {"i": 1})
    put(saver, "delta", {"i": 0}, counters_since_delta_snapshot={"messages": [1, 1]})

    with pytest.raises(DeltaChannelPruneError, match="delta"):
        saver.prune(["plain", "delta"])
    assert len(list(saver.list(config("plain")))) == 2  # nothing was pruned
    with pytest.raises(NotImplementedError):
        saver.prune(["delta"])
    with pytest.raises(PruneStrategyError, match="unknown prune strategy"):
        saver.prune(["plain"], strategy="oldest")
    with pytest.raises(ValueError, match="unknown prune strategy"):
        saver.prune(["plain"], strategy="oldest")
    with pytest.raises(TypeError):
        saver.prune("plain")


def test_bad_ids_are_refused_before_anything_is_written(saver: AgentckptSaver, url: str) -> None:
    from agentckpt import InvalidValueError

    with pytest.raises(InvalidValueError, match="U\\+0000"):
        put(saver, "bad\u0000thread", {})
    with pytest.raises(ConfigurationError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    assert run_sql(url, "SELECT count(*) FROM runs") == [(0,)]


# -- visibility and corruption -----------------------------------------------------------------


def test_a_step_without_its_index_row_or_an_index_row_without_its_step_shows_nothing(
    saver: AgentckptSaver, url: str
) -> None:
    first = put(saver, "v", {"i": 0})
    second = put(saver, "v", {"i": 1}, parent=first)
    rid = str(AgentckptSaver.run_id("v"))
    cid = second["configurable"]["checkpoint_id"]

    # A crash between the commit and the index insert: the step exists, no index row.
    run_sql(url, "DELETE FROM step_index WHERE run_id = ? AND checkpoint_id = ?", rid, cid)
    latest = saver.get_tuple(config("v"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"i": 0}

    # The next put lands after the orphan step and is visible.
    third = put(saver, "v", {"i": 2}, parent=first)
    assert saver.get_tuple(config("v")).checkpoint["channel_values"] == {"i": 2}  # type: ignore[union-attr]

    # A crash half-way through deleting the thread: steps gone, index rows left.
    run_sql(url, "DELETE FROM steps WHERE run_id = ?", rid)
    assert saver.get_tuple(config("v")) is None
    assert saver.get_tuple(third) is None
    assert list(saver.list(config("v"))) == []
    saver.delete_thread("v")
    assert run_sql(url, "SELECT count(*) FROM step_index") == [(0,)]


def test_an_index_row_pointing_at_another_checkpoint_is_corruption(
    saver: AgentckptSaver, url: str
) -> None:
    first = put(saver, "c", {"i": 0})
    second = put(saver, "c", {"i": 1}, parent=first)
    run_sql(
        url,
        "UPDATE step_index SET step = 1 WHERE checkpoint_id = ?",
        second["configurable"]["checkpoint_id"],
    )
    with pytest.raises(CorruptDataError, match="does not hold checkpoint"):
        saver.get_tuple(second)


def test_two_savers_writing_one_thread_never_lose_a_checkpoint(url: str) -> None:
    with AgentckptSaver.from_url(url) as one, AgentckptSaver.from_url(url) as two:
        written = []
        parent = None
        for i in range(12):
            saver = one if i % 2 else two
            parent = put(saver, "shared", {"i": i}, parent=parent)
            written.append(parent["configurable"]["checkpoint_id"])
        for saver in (one, two):
            assert [t.checkpoint["id"] for t in saver.list(config("shared"))] == written[::-1]
            assert [
                t.checkpoint["channel_values"]["i"] for t in saver.list(config("shared"))
            ] == list(range(11, -1, -1))


def test_threads_share_one_sync_saver(saver: AgentckptSaver) -> None:
    graph = chat_graph(saver)
    errors: list[BaseException] = []

    def converse(thread: str) -> None:
        try:
            for turn in range(5):
                graph.invoke({"messages": [HumanMessage(f"{thread} {turn}")]}, config(thread))
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=converse, args=(f"t{i}",)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert errors == []
    for i in range(4):
        messages = graph.get_state(config(f"t{i}")).values["messages"]
        assert [m.content for m in messages[::2]] == [f"t{i} {turn}" for turn in range(5)]


# -- graphs ---------------------------------------------------------------------------------


def test_a_graph_resumes_history_and_forks_through_the_sync_saver(url: str) -> None:
    cfg = {"configurable": {"thread_id": "g"}}
    with AgentckptSaver.from_url(url) as saver:
        graph = chat_graph(saver)
        graph.invoke({"messages": [HumanMessage("one")]}, cfg)
        graph.invoke({"messages": [HumanMessage("two")]}, cfg)
    with AgentckptSaver.from_url(url) as fresh:
        graph = chat_graph(fresh)
        state = graph.get_state(cfg)
        assert [m.content for m in state.values["messages"]][::2] == ["one", "two"]
        history = list(graph.get_state_history(cfg))
        assert len(history) == 6
        # Time travel: continue from the state after the first turn.
        after_one = next(h for h in history if len(h.values.get("messages", [])) == 2)
        forked = graph.invoke({"messages": [HumanMessage("again")]}, after_one.config)
        assert [m.content for m in forked["messages"]][::2] == ["one", "again"]
        assert [m.content for m in graph.get_state(cfg).values["messages"]][::2] == [
            "one",
            "again",
        ]


async def test_a_graph_runs_through_the_async_saver(url: str) -> None:
    cfg = {"configurable": {"thread_id": "async"}}
    async with AgentckptSaver.afrom_url(url) as saver:
        graph = chat_graph(saver)
        await graph.ainvoke({"messages": [HumanMessage("hello")]}, cfg)
        await graph.ainvoke({"messages": [HumanMessage("again")]}, cfg)
        state = await graph.aget_state(cfg)
        history = [h async for h in graph.aget_state_history(cfg)]
    assert [m.content for m in state.values["messages"]][::2] == ["hello", "again"]
    assert len(history) == 6
    # The sync API sees what the async one wrote.
    with AgentckptSaver.from_url(url) as saver:
        assert len(list(saver.list(cfg))) == 6


def test_the_async_store_belongs_to_one_event_loop(url: str) -> None:
    saver = AgentckptSaver(url)
    home = asyncio.new_event_loop()
    try:
        assert home.run_until_complete(saver.aget_tuple(config("x"))) is None
        with pytest.raises(ConfigurationError, match="another event loop"):
            asyncio.run(saver.aget_tuple(config("x")))
        assert saver.get_tuple(config("x")) is None  # the sync API works from anywhere
    finally:
        home.run_until_complete(saver.aclose())
        home.close()


def test_given_stores_are_used_and_must_keep_every_step(url: str) -> None:
    with Store.connect(url) as pruning, pytest.raises(ConfigurationError, match="prune=False"):
        AgentckptSaver(store=pruning)
    store = Store.connect(url, policy=SnapshotPolicy(prune=False))
    try:
        saver = AgentckptSaver(store=store)
        put(saver, "given", {"i": 1})
        assert store.get_run(AgentckptSaver.run_id("given")).kind == "langgraph"
        with pytest.raises(ConfigurationError, match="no async store"):
            asyncio.run(saver.aget_tuple(config("given")))
        saver.close()  # does not close a store it was given
        assert store.get_run(AgentckptSaver.run_id("given")) is not None
    finally:
        store.close()


def test_with_allowlist_clones_keep_working(saver: AgentckptSaver) -> None:
    clone = saver.with_allowlist([("langchain_core", "messages", "human", "HumanMessage")])
    stored = put(clone, "allow", {"messages": [HumanMessage("hi", id="h")]})
    for reader in (clone, saver):
        got = reader.get_tuple(stored)
        assert got is not None
        assert got.checkpoint["channel_values"]["messages"] == [HumanMessage("hi", id="h")]


def test_blob_gc_keeps_the_blobs_checkpoints_refer_to(saver: AgentckptSaver, url: str) -> None:
    from agentckpt.runs import gc_blobs

    first = put(saver, "gc", {"doc": "a" * 10_000, "messages": [AIMessage("b" * 10_000, id="m")]})
    second = put(saver, "gc", {"doc": "c" * 10_000}, parent=first)
    saver.prune(["gc"])  # the first checkpoint, and its two blobs' last references, go

    gc_blobs(saver.store, grace=0)

    rid = str(saver.run_id("gc"))
    assert run_sql(url, "SELECT count(*) FROM blobs WHERE run_id = ?", rid) == [(1,)]
    got = saver.get_tuple(second)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"doc": "c" * 10_000}


async def test_a_closed_saver_opens_new_stores_on_next_use(url: str) -> None:
    saver = AgentckptSaver(url)
    stored = await saver.aput(
        config("reopen"), empty_checkpoint(), {"source": "input", "step": -1}, {}
    )
    await saver.aclose()
    assert await saver.aget_tuple(stored) is not None
    await saver.aclose()
    assert saver.get_tuple(stored) is not None
    saver.close()
