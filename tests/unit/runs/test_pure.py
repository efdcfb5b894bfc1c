"""The pure parts of the run loop: retry policy, offloading, references, leases, queues."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt import ConfigurationError, InvalidValueError
from agentckpt._compat.background import Drain, Ticker
from agentckpt._core.blobs import decompress, is_ref
from agentckpt._core.codec import encode, same
from agentckpt._core.compression import pack
from agentckpt._core.delta import diff
from agentckpt.runs import Artifact, OffloadPolicy, RetryPolicy
from agentckpt.runs.blob_refs import step_refs
from agentckpt.runs.lease_terms import renew_interval, validate_ttl
from agentckpt.runs.loop import _fresh
from agentckpt.runs.offload import (
    blob_type,
    changed_members,
    changed_values,
    may_hold_refs,
    offload,
    ref_uris,
)
from tests.unit.core import strategies
from tests.unit.core.test_delta import LOOKALIKES, SPECIAL_TEXT

exact_values = strategies.json_values(SPECIAL_TEXT, LOOKALIKES, text_size=8)
RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


def uri_for(digest: str) -> str:
    return f"test:{digest}"


# -- retry ----------------------------------------------------------------------------


def test_retry_delays_grow_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(
        max_attempts=6, initial_delay=1.0, multiplier=3.0, max_delay=20.0, jitter=0
    )
    assert [policy.delay(n) for n in range(1, 6)] == [1.0, 3.0, 9.0, 20.0, 20.0]
    assert [policy.allows(n) for n in range(1, 7)] == [True] * 5 + [False]


def test_retry_jitter_stays_within_its_fraction() -> None:
    policy = RetryPolicy(initial_delay=10.0, jitter=0.2)
    assert policy.delay(1, rng=lambda: 0.0) == pytest.approx(8.0)
    assert policy.delay(1, rng=lambda: 0.999999) == pytest.approx(12.0, rel=1e-5)


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"initial_delay": -1},
        {"multiplier": 0.5},
        {"jitter": 1.5},
    ],
)
def test_bad_retry_policies_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**options)


# -- offloading -------------------------------------------------------------------------


def test_offload_moves_large_strings_bytes_and_artifacts_only() -> None:
    big = "é" * 3000  # 6000 bytes of UTF-8 but only 3000 characters
    state = {
        "big": big,
        "small": "x" * 4096,  # exactly the threshold: stays
        "raw": b"\x00\xff",
        "file": Artifact(b"%PDF", "application/pdf"),
        "text": Artifact("tiny"),
        "nested": {"list": [1, big, None]},
        "kept": {"a": [1, 2]},
        "x" * 5000: 1,  # keys never move
    }
    out, pending = offload(state, OffloadPolicy(), uri_for)

    assert out["small"] == "x" * 4096
    assert "x" * 5000 in out
    assert out["kept"] is state["kept"]  # untouched subtrees are shared, not copied
    assert state["big"] == big
    assert state["nested"]["list"][1] == big
    assert is_ref(out["big"])
    assert blob_type(out["big"]) == "text"
    assert out["nested"]["list"][1] == out["big"]  # equal values: one blob
    assert blob_type(out["raw"]) == "bytes"
    assert out["file"]["media_type"] == "application/pdf"
    assert blob_type(out["text"]) == "text"
    assert len(pending) == 4
    by_digest = {blob.digest: blob for blob in pending}
    restored = decompress(
        by_digest[out["big"]["$blob"][7:]].codec,
        by_digest[out["big"]["$blob"][7:]].data,
        digest=out["big"]["$blob"][7:],
        where="test",
    )
    assert restored.decode() == big
    assert ref_uris(out) == {blob.uri for blob in pending}


def test_offload_leaves_references_and_invalid_text_alone() -> None:
    ref, _ = offload({"a": b"data"}, OffloadPolicy(), uri_for)
    again, pending = offload(ref, OffloadPolicy(), uri_for)
    assert again is ref
    assert pending == []
    lone = "\ud800" * 2000  # not UTF-8: left for the codec to refuse with its path
    out, pending = offload({"s": lone}, OffloadPolicy(), uri_for)
    assert out["s"] is lone
    assert pending == []
    with pytest.raises(InvalidValueError, match="/s"):
        encode(out)


def test_a_bad_artifact_is_refused_with_its_path() -> None:
    with pytest.raises(InvalidValueError, match="/items/0"):
        offload({"items": [Artifact(123)]}, OffloadPolicy(), uri_for)  # type: ignore[arg-type]


def test_the_offload_threshold_is_validated() -> None:
    with pytest.raises(ConfigurationError):
        OffloadPolicy(threshold=-1)


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=20),
    st.text(alphabet="ab", min_size=60, max_size=200),
    st.binary(max_size=50),
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_offload_then_load_gives_back_the_original(value: Any) -> None:
    out, pending = offload(value, OffloadPolicy(threshold=50), uri_for)
    blobs = {blob.uri: blob for blob in pending}

    def restore(node: Any) -> Any:
        if is_ref(node):
            blob = blobs[node["uri"]]
            data = decompress(blob.codec, blob.data, digest=blob.digest, where="test")
            return data.decode() if blob_type(node) == "text" else data
        if type(node) is dict:
            return {k: restore(v) for k, v in node.items()}
        if type(node) is list:
            return [restore(v) for v in node]
        return node

    assert restore(out) == value
    encode(out)  # what is committed is always a storable JSON value


# -- references in stored steps -----------------------------------------------------


def row(step: int, kind: str, document: Any) -> dict[str, Any]:
    codec, payload = pack(encode(document))
    return {"step": step, "kind": kind, "codec": codec, "payload": payload}


def test_step_refs_find_references_a_delta_builds_from_another() -> None:
    a, _ = offload({"doc": "A" * 5000}, OffloadPolicy(), uri_for)
    b, _ = offload({"doc": "B" * 5000}, OffloadPolicy(), uri_for)
    patch = diff(a, b)
    # The delta rewrites only fields of the reference: no whole reference appears in it.
    assert not any(is_ref(op.get("value")) for op in patch)
    in_db, external = step_refs(RUN, [row(1, "snapshot", a), row(2, "delta", patch)])
    assert external == {a["doc"]["uri"], b["doc"]["uri"]}
    assert in_db == set()


def test_step_refs_split_database_and_external_blobs() -> None:
    state, _ = offload({"x": b"1", "y": "z" * 5000}, OffloadPolicy(), lambda d: f"db:sha256:{d}")
    more, _ = offload({"w": b"2"}, OffloadPolicy(), lambda d: f"s3://bucket/{d}")
    in_db, external = step_refs(
        RUN,
        [
            row(4, "snapshot", state),
            row(5, "delta", [{"op": "add", "path": "/w", "value": more["w"]}]),
            {"step": None, "kind": None, "codec": None, "payload": None},
        ],
    )
    assert len(in_db) == 2
    assert len(external) == 1


# -- leases -----------------------------------------------------------------------------


def test_lease_math() -> None:
    assert renew_interval(30) == 10
    assert validate_ttl(1) == 1.0
    for bad in (0, -1, 0.01, True, "30"):
        with pytest.raises(ConfigurationError):
            validate_ttl(bad)  # type: ignore[arg-type]


# -- background work ------------------------------------------------------------------


def test_a_full_drain_drops_and_counts_without_blocking() -> None:
    handled: list[list[int]] = []
    drain: Drain[int] = Drain(handled.append, maxsize=3, batch_size=10, name="t")
    assert [drain.offer(i) for i in range(5)] == [True, True, True, False, False]
    assert drain.dropped == 2
    drain.start()
    drain.close()
    assert handled == [[0, 1, 2]]
    assert (drain.handled, drain.failed) == (3, 0)
    assert drain.offer(9) is False  # closed
    assert drain.dropped == 3


def test_a_failing_consumer_is_counted_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(batch: list[int]) -> None:
        raise RuntimeError("database gone")

    drain: Drain[int] = Drain(broken, maxsize=10, batch_size=2, name="t")
    drain.start()
    for i in range(5):
        assert drain.offer(i)
    drain.close()
    assert (drain.failed, drain.handled) == (5, 0)
    assert "database gone" in caplog.text


def test_a_ticker_calls_until_told_to_stop() -> None:
    calls: list[int] = []
    done = threading.Event()

    def tick() -> bool:
        calls.append(1)
        if len(calls) == 3:
            done.set()
            return False  # stop ticking
        if len(calls) == 1:
            raise RuntimeError("one failure does not stop the ticker")
        return True

    ticker = Ticker(0.001, tick, name="t")
    ticker.start()
    assert done.wait(30)
    ticker.stop()
    assert len(calls) == 3


# -- the public surface -------------------------------------------------------------


def test_every_public_name_resolves() -> None:
    import agentckpt.runs

    for name in agentckpt.runs.__all__:
        assert getattr(agentckpt.runs, name) is not None, name
    assert agentckpt.runs.AgentRun.__module__ == "agentckpt.runs.loop"
    assert agentckpt.runs.AsyncAgentRun.__module__ == "agentckpt.runs.loop_async"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = agentckpt.runs.Nope


@pytest.mark.parametrize(
    "first", ["agentckpt.runs.loop", "agentckpt.runs.recovery_async", "agentckpt.runs"]
)
def test_modules_import_in_any_order(first: str) -> None:
    code = f"import {first}\nfrom agentckpt.runs import AgentRun, AsyncAgentRun, gc_blobs"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_changed_values_are_the_members_that_differ() -> None:
    previous = {"a": 1, "b": [1, 2], "c": "x"}
    assert changed_values({"a": 1, "b": [1, 2], "c": "y"}, previous) == ["y"]
    assert changed_values(dict(previous), previous) == []
    # Other keys, another order, not an object: not comparable member by member.
    assert changed_values({"a": 1, "b": [1, 2]}, previous) is None
    assert changed_values({"c": "x", "a": 1, "b": [1, 2]}, previous) is None
    assert changed_values([1], previous) is None
    assert changed_values(previous, None) is None


def test_changed_members_say_which_members_differ_in_order() -> None:
    previous = {"a": 1, "b": [1, 2], "c": "x"}
    assert changed_members({"a": 1, "b": [1, 3], "c": "y"}, previous) == b"\x00\x01\x01"
    assert changed_members(dict(previous), previous) == b"\x00\x00\x00"
    assert changed_members({"b": [1, 2], "a": 1, "c": "x"}, previous) is None
    assert changed_members(previous, [1]) is None


def test_changed_values_refuses_values_whose_eq_is_not_a_bool() -> None:
    class Vector:
        def __ne__(self, other: object) -> Any:
            return self  # like an array type: a value without a truth

        def __bool__(self) -> bool:
            raise ValueError("ambiguous")

    assert changed_values({"a": Vector()}, {"a": 1}) is None
    assert changed_members({"a": Vector()}, {"a": 1}) is None


def test_changed_members_refuses_an_ne_that_answers_other_ints() -> None:
    """The flags are 0/1 bytes the plan combines as masks: an ``__ne__`` answering 2 (a
    truthy int, not a bool) makes them None rather than a mask the plan misreads."""

    class Odd:
        def __ne__(self, other: object) -> Any:
            return 2

    assert changed_members({"a": Odd(), "b": 1}, {"a": 1, "b": 1}) is None


def test_offload_of_the_changed_members_moves_what_they_hold() -> None:
    """Only the changed members are looked at; what they hold moves as in a full scan."""
    policy = OffloadPolicy(threshold=8)
    committed, _ = offload({"log": "short", "doc": "d" * 4}, policy, uri_for)
    state = {**committed, "doc": "x" * 40}
    changed = changed_values(state, committed)
    assert changed == ["x" * 40]
    stored, pending = offload(state, policy, uri_for, changed=changed)
    assert is_ref(stored["doc"])
    assert stored["log"] == "short"
    assert [blob.size for blob in pending] == [40]
    assert offload(committed, policy, uri_for, changed=[]) == (committed, [])
    with_bytes = {**committed, "doc": b"\x00"}
    moved, pending = offload(with_bytes, policy, uri_for, changed=[b"\x00"])
    assert is_ref(moved["doc"])
    assert len(pending) == 1


def test_may_hold_refs_finds_references_in_values() -> None:
    ref, _ = offload({"doc": "x" * 40}, OffloadPolicy(threshold=8), uri_for)
    assert may_hold_refs([1, ref["doc"]])
    assert may_hold_refs([b"not json"])  # not encodable: cannot say
    assert not may_hold_refs(["$blob", {"blob": 1}, []])


@given(st.dictionaries(st.text(max_size=4), exact_values, max_size=6))
def test_a_steps_copy_of_the_state_is_exact_and_private(state: dict[str, Any]) -> None:
    copy = _fresh(state)
    assert same(copy, state)
    before = encode(state)
    for value in copy.values():
        if type(value) is list:
            value.append(1)
        elif type(value) is dict:
            value["new"] = 1
    copy["added"] = 1
    assert encode(state) == before
