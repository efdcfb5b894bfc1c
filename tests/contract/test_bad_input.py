"""Values that cannot be stored exactly are refused whole; values that can, round-trip exactly.

A refusal is an :class:`InvalidValueError` naming the JSON Pointer of the offending value
and the problem, raised before anything reaches the database: the run is left as it was
and the store stays usable.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from agentckpt import InvalidValueError, Limits, SnapshotPolicy

KEEP_ALL = SnapshotPolicy(interval=5, prune=False)
MAX_DEPTH = Limits().max_depth


class Widget:
    """Not a JSON type."""


def nest(levels: int) -> list[Any]:
    """A list nested ``levels`` containers deep (``[]`` is 1 level)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def in_message(bad: Any) -> dict[str, Any]:
    """A conversation whose second message carries ``bad`` as its content."""
    return {
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": bad},
        ]
    }


def with_bad_key(key: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hello"}, {key: "x"}]}


# (id, state builder, expected JSON Pointer, words the message must contain)
REFUSED: list[tuple[str, Callable[[], Any], str, list[str]]] = [
    ("nan", lambda: in_message(float("nan")), "/messages/1/content", ["nan", "not valid JSON"]),
    ("inf", lambda: in_message(float("inf")), "/messages/1/content", ["inf", "not valid JSON"]),
    ("-inf", lambda: in_message(float("-inf")), "/messages/1/content", ["-inf", "not valid JSON"]),
    ("root-nan", lambda: float("nan"), "", ["nan"]),
    (
        "lone-surrogate-value",
        lambda: in_message("ok \ud800 not ok"),
        "/messages/1/content",
        ["lone surrogate U+D800", "UTF-8"],
    ),
    (
        "lone-surrogate-key",
        lambda: with_bad_key("bad\udc00key"),
        "/messages/1",
        ["dict key", "lone surrogate U+DC00"],
    ),
    ("int-key", lambda: with_bad_key(1), "/messages/1", ["dict key 1", "int", "not str"]),
    ("none-key", lambda: with_bad_key(None), "/messages/1", ["dict key None", "not str"]),
    ("tuple", lambda: in_message(("a", "b")), "/messages/1/content", ["tuple", "list"]),
    ("set", lambda: in_message({1, 2}), "/messages/1/content", ["set", "not a JSON type"]),
    ("bytes", lambda: in_message(b"raw"), "/messages/1/content", ["bytes", "base64"]),
    (
        "datetime",
        lambda: in_message(datetime(2024, 1, 1, tzinfo=UTC)),
        "/messages/1/content",
        ["datetime.datetime", "ISO 8601"],
    ),
    ("object", lambda: in_message(Widget()), "/messages/1/content", ["Widget", "not a JSON type"]),
    (
        "str-subclass",
        lambda: in_message(type("Name", (str,), {})("x")),
        "/messages/1/content",
        ["subclass of str"],
    ),
    (
        "too-deep",
        # root dict, messages list, message dict: 3 levels; the 201st level is refused
        lambda: in_message(nest(MAX_DEPTH - 2)),
        "/messages/1/content" + "/0" * (MAX_DEPTH - 3),
        ["deeper than the limit", str(MAX_DEPTH)],
    ),
    (
        "pointer-escapes",
        lambda: {"a/b": {"c~d": [0, float("nan")]}},
        "/a~1b/c~0d/1",
        ["nan"],
    ),
]


def snapshot_of(store: Any, run_id: Any) -> tuple[Any, str, Any]:
    latest = store.latest(run_id)
    return store.steps(run_id), json.dumps(latest.state), store.get_run(run_id).head_step


@pytest.mark.parametrize(
    ("build", "path", "words"),
    [pytest.param(b, p, w, id=i) for i, b, p, w in REFUSED],
)
def test_refused_value_leaves_the_run_untouched(
    make_store: Any, build: Callable[[], Any], path: str, words: list[str]
) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, in_message("first"))
    store.commit(run.run_id, in_message("second"), metadata={"tokens": 1})
    before = snapshot_of(store, run.run_id)

    with pytest.raises(InvalidValueError) as raised:
        store.commit(run.run_id, build(), metadata={"tokens": 2})
    assert raised.value.path == path
    message = str(raised.value)
    for word in words:
        assert word in message, (word, message)
    assert isinstance(raised.value, ValueError)

    with pytest.raises(InvalidValueError):  # an explicit step number fails the same way
        store.commit(run.run_id, build(), step=3)
    with pytest.raises(InvalidValueError):  # and so does a retry of an existing step
        store.commit(run.run_id, build(), step=2)

    assert snapshot_of(store, run.run_id) == before
    assert store.get_run(run.run_id).metadata == {"tokens": 1}
    # Nothing of the refused commit lingers: the next good commit is the next step.
    assert store.commit(run.run_id, in_message("third")).step == 3
    assert store.latest(run.run_id).state == in_message("third")


def test_refused_size(make_store: Any) -> None:
    limit = 1000
    store = make_store(policy=KEEP_ALL, limits=Limits(max_bytes=limit))
    run = store.create_run()
    store.commit(run.run_id, in_message("first"))
    before = snapshot_of(store, run.run_id)

    too_big = in_message("x" * limit)
    with pytest.raises(InvalidValueError) as raised:
        store.commit(run.run_id, too_big)
    assert raised.value.path == ""
    assert "over the limit of 1000 bytes" in str(raised.value)
    assert "max_bytes" in str(raised.value)
    assert snapshot_of(store, run.run_id) == before

    # Exactly at the limit is fine.
    base = len(json.dumps(in_message(""), separators=(",", ":")).encode())
    at_limit = in_message("y" * (limit - base))
    assert len(json.dumps(at_limit, separators=(",", ":")).encode()) == limit
    assert store.commit(run.run_id, at_limit).step == 2
    assert store.latest(run.run_id).state == at_limit
    with pytest.raises(InvalidValueError):
        store.create_run(config={"big": "z" * limit})


# Values JSON can carry exactly, including the ones that are easy to get wrong.
EXACT: list[tuple[str, Any]] = [
    ("nul", "before\x00after"),
    ("escaped-nul-text", "\\u0000"),
    ("both-nuls", ["\x00", "\\u0000", "\\\x00"]),
    ("nul-key", {"k\x00": 1, "\\u0000": 2}),
    ("big-int", 2**200),
    ("big-negative-int", -(2**200) + 1),
    ("i64-edges", [2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1]),
    ("negative-zero", -0.0),
    ("denormal", 5e-324),
    ("float-edges", [1.7976931348623157e308, 0.1, 1e16, 1.0, 1, True]),
    ("astral", "emoji \U0001f600 clef \U0001d11e"),
    ("astral-key", {"\U0001f600": "\U0010ffff"}),
    ("key-order", {"z": 1, "a": 2, "m": {"b": 1, "a": 2}}),
    ("empty", [{}, [], "", None, False]),
]


def exact_docs(value: Any) -> list[Any]:
    """The value at the root, and inside a state, as a snapshot and via deltas."""
    return [
        value,
        {"system": "s" * 300, "messages": [{"content": "hi"}]},
        {"system": "s" * 300, "messages": [{"content": "hi"}, {"content": value}]},
        {"system": "s" * 300, "messages": [{"content": value}, {"content": [value]}]},
    ]


@pytest.mark.parametrize("value", [pytest.param(v, id=i) for i, v in EXACT])
def test_exact_values_round_trip(make_store: Any, value: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    docs = exact_docs(value)
    for doc in docs:
        store.commit(run.run_id, doc)
    assert [i.kind for i in store.steps(run.run_id)] == ["snapshot", "snapshot", "delta", "delta"]

    reader = make_store()  # no cached state: everything is read back from the database
    for step, doc in enumerate(docs, start=1):
        got = reader.state_at(run.run_id, step).state
        assert json.dumps(got) == json.dumps(doc), step
        assert repr(got) == repr(doc), step  # repr tells -0.0, big ints and types apart
    assert json.dumps(reader.latest(run.run_id).state) == json.dumps(docs[-1])


def test_deep_nesting_up_to_the_limit(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    deepest = nest(MAX_DEPTH)
    docs = [
        deepest,  # a snapshot at exactly the limit
        {"a": 1},
        {"a": nest(MAX_DEPTH - 1)},  # a delta that carries a value MAX_DEPTH - 1 deep
        deepest,  # a delta replacing the whole document
    ]
    for doc in docs:
        store.commit(run.run_id, doc)
    reader = make_store()
    for step, doc in enumerate(docs, start=1):
        assert json.dumps(reader.state_at(run.run_id, step).state) == json.dumps(doc)
    with pytest.raises(InvalidValueError):
        store.commit(run.run_id, nest(MAX_DEPTH + 1))


def test_deep_nesting_with_a_raised_limit(make_store: Any) -> None:
    limits = Limits(max_depth=300)
    store = make_store(policy=KEEP_ALL, limits=limits)
    run = store.create_run()
    docs = [{"base": True}, {"deep": nest(299)}, nest(300)]
    for doc in docs:
        store.commit(run.run_id, doc)
    reader = make_store(limits=limits)
    for step, doc in enumerate(docs, start=1):
        assert json.dumps(reader.state_at(run.run_id, step).state) == json.dumps(doc)
    with pytest.raises(InvalidValueError, match="limit of 300"):
        store.commit(run.run_id, nest(301))


def test_metadata_with_nul_is_refused(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    with pytest.raises(InvalidValueError) as raised:
        store.create_run(metadata={"user": {"name": "a\x00b"}})
    assert raised.value.path == "/user/name"
    assert "U+0000" in str(raised.value)
    assert store.list_runs() == []

    run = store.create_run(metadata={"user": "u"})
    store.commit(run.run_id, {"v": 1})
    before = snapshot_of(store, run.run_id)
    with pytest.raises(InvalidValueError, match="U\\+0000"):
        store.commit(run.run_id, {"v": 2}, metadata={"bad\x00key": 1})
    with pytest.raises(InvalidValueError, match="U\\+0000"):
        store.commit(run.run_id, {"v": 2}, metadata={"list": ["ok", "\x00"]})
    with pytest.raises(InvalidValueError):
        store.commit(run.run_id, {"v": 2}, metadata={"nan": float("nan")})
    with pytest.raises(InvalidValueError):
        store.commit(run.run_id, {"v": 2}, metadata=["not", "a", "dict"])  # type: ignore[arg-type]
    assert snapshot_of(store, run.run_id) == before
    assert store.get_run(run.run_id).metadata == {"user": "u"}
    # The literal text \u0000 is fine in metadata; only the character is refused.
    store.commit(run.run_id, {"v": 2}, metadata={"note": "\\u0000"})
    assert store.get_run(run.run_id).metadata == {"user": "u", "note": "\\u0000"}


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "", "1234", "g" * 32])
def test_bad_run_id(store: Any, bad_id: str) -> None:
    for call in (
        lambda: store.get_run(bad_id),
        lambda: store.latest(bad_id),
        lambda: store.steps(bad_id),
        lambda: store.commit(bad_id, {"v": 1}),
        lambda: store.delete_run(bad_id),
        lambda: store.create_run(bad_id),
    ):
        with pytest.raises(InvalidValueError) as raised:
            call()
        assert "is not a UUID" in str(raised.value)
        assert repr(bad_id) in str(raised.value)
    assert store.list_runs() == []


@pytest.mark.parametrize("step", [-1, 2**63, 2**70, True, 1.0, "3"])
def test_bad_step_number_is_refused_before_any_write(make_store: Any, step: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, {"n": 1})
    with pytest.raises(InvalidValueError, match=r"step .* must be an int from 0 to"):
        store.commit(run.run_id, {"n": 2}, step=step)
    assert [info.step for info in store.steps(run.run_id)] == [1]
    assert store.commit(run.run_id, {"n": 2}).step == 2


@pytest.mark.parametrize("step", [-1, 2**63, 2**70, True, 1.0, "3"])
def test_bad_step_number_to_read_or_fork_is_refused(make_store: Any, step: Any) -> None:
    """state_at and fork name the bad step (2**70 was an OverflowError from the SQLite
    driver, True read step 1, a fork of True made a run)."""
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, {"n": 1})
    for call in (lambda: store.state_at(run.run_id, step), lambda: store.fork(run.run_id, step)):
        with pytest.raises(InvalidValueError, match=r"step .* must be an int from 0 to"):
            call()
    assert [r.run_id for r in store.list_runs()] == [run.run_id]


@pytest.mark.parametrize("head", [-1, 2**63, True, 1.0])
def test_bad_expected_head_is_refused_before_any_write(make_store: Any, head: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, {"n": 1})
    with pytest.raises(InvalidValueError, match=r"expected_head .* must be an int from 0 to"):
        store.commit(run.run_id, {"n": 2}, expected_head=head)
    assert [info.step for info in store.steps(run.run_id)] == [1]


@pytest.mark.parametrize("epoch", [-1, 2**64, "1"])
def test_bad_epoch_is_refused_before_any_write(make_store: Any, epoch: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    with pytest.raises(InvalidValueError, match=r"epoch .* must be an int from 0 to"):
        store.commit(run.run_id, {"n": 1}, epoch=epoch)
    assert store.steps(run.run_id) == []
