"""Commit plans built from the member cache: exact, strict, checksummed as the whole state.

A plan against a head with members encodes and diffs only what changed; these tests hold
it to what the general path guarantees: the new head is the same state (:func:`same`),
the checksum is the one a fresh computation over the whole state gives, a snapshot's
bytes are the codec's encoding, and what cannot be stored is refused with its path.
"""

from __future__ import annotations

import enum
import hashlib
import math
import uuid
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentckpt._core import plan as plan_module
from agentckpt._core.checksums import Members, checksum_v1, matches
from agentckpt._core.codec import Limits, decode, encode_fast, encode_trusted, same
from agentckpt._core.compression import unpack
from agentckpt._core.delta import apply
from agentckpt._core.plan import EMPTY_HEAD, Head, Plan, plan_commit, rebuild
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import CorruptDataError, InvalidValueError
from agentckpt.runs.offload import encodings_of
from tests.unit.core import strategies
from tests.unit.core.test_delta import LOOKALIKES, PROPERTY, SPECIAL_TEXT, edited

RUN = uuid.UUID(int=7)
POLICY = SnapshotPolicy(interval=1000)
texts = strategies.texts(SPECIAL_TEXT, text_size=8)
values = strategies.json_values(SPECIAL_TEXT, LOOKALIKES, text_size=8)
objects = st.dictionaries(texts, values, max_size=6)


def commit(head: Head, state: Any, **kwargs: Any) -> Plan:
    step = 0 if head.step is None else head.step + 1
    return plan_commit(RUN, head, state, step=step, keep_open=False, policy=POLICY, **kwargs)


def document(plan: Plan) -> Any:
    return decode(unpack(plan.stored.codec, plan.stored.data, where="test"))


def check(plan: Plan, base: Any, state: Any) -> None:
    """The plan stores exactly ``state``, under the checksum of the whole state."""
    assert same(plan.head.state, state)
    stored = document(plan)
    rebuilt = stored if plan.kind == "snapshot" else apply(base, stored)
    assert same(rebuilt, state)
    if type(state) is dict:
        assert plan.checksum == Members.of(state).checksum
        assert plan.head.members is not None
        encoding = plan.head.members.encoding()
        assert same(decode(encoding), state)
        assert plan.state_bytes in (len(encoding), len(encode_trusted(state)))
        if encode_fast(state) is not None:  # else floats may read otherwise (Members.encoding)
            assert encoding == encode_trusted(state)
        # The cached flags of which members are containers, kept up to date member by
        # member, say what the state holds.
        assert plan.head.members.nested == bytes(
            type(value) in (dict, list) for value in state.values()
        )
    else:
        assert plan.checksum == checksum_v1(encode_trusted(state))
    assert matches(state, plan.checksum)[0]


@PROPERTY
@given(st.data())
def test_a_plan_against_cached_members_stores_exactly_the_new_state(data: st.DataObject) -> None:
    old = data.draw(objects)
    new = data.draw(edited(old))
    first = commit(EMPTY_HEAD, old)
    check(first, None, old)
    check(commit(first.head, new), old, new)


@PROPERTY
@given(objects, st.lists(values, max_size=4), st.lists(values, min_size=1, max_size=3))
def test_items_appended_to_a_member_array_are_one_add_op_each(
    rest: dict[str, Any], items: list[Any], more: list[Any]
) -> None:
    old = {**rest, "log": items}
    new = {**rest, "log": items + more}
    first = commit(EMPTY_HEAD, old)
    plan = commit(first.head, new)
    check(plan, old, new)
    if plan.kind == "delta":
        assert [op["path"] for op in document(plan)] == ["/log/-"] * len(more)


@PROPERTY
@given(objects, st.lists(values, max_size=4), st.lists(values, min_size=1, max_size=3))
def test_a_prefix_hint_encodes_only_the_new_items(
    rest: dict[str, Any], items: list[Any], more: list[Any]
) -> None:
    old = {**rest, "log": items}
    new = {**rest, "log": items + more}
    first = commit(EMPTY_HEAD, old)
    check(commit(first.head, new, prefix_hint=("log", len(items))), old, new)


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"t": enum.Enum("Hue", "RED").RED}, "/log/1/t"),
        ({"x": (1, 2)}, "/log/1/x"),
        ([0.5, math.nan], "/log/1/1"),
        ({"x": [None, math.inf]}, "/log/1/x/1"),
        (uuid.UUID(int=3), "/log/1"),
    ],
)
def test_hinted_new_items_are_validated_like_any_new_value(bad: Any, path: str) -> None:
    """Appended items checked from their encoding: what orjson writes anyway (enums,
    tuples, NaN, UUIDs) is still refused, with its path in the state."""
    old = {"log": [{"a": 1}], "n": 0}
    first = commit(EMPTY_HEAD, old)
    with pytest.raises(InvalidValueError) as error:
        commit(first.head, {"log": [{"a": 1}, bad], "n": 1}, prefix_hint=("log", 1))
    assert error.value.path == path


def test_hinted_new_items_deeper_than_the_limit_are_refused() -> None:
    limits = Limits(max_depth=5)
    old = {"log": [], "n": 0}
    first = commit(EMPTY_HEAD, old, limits=limits)
    ok = {"log": [[[[1]]]], "n": 1}  # 5 levels with the state
    check(commit(first.head, ok, prefix_hint=("log", 0), limits=limits), old, ok)
    with pytest.raises(InvalidValueError) as error:
        commit(first.head, {"log": [[[[[1]]]]], "n": 1}, prefix_hint=("log", 0), limits=limits)
    assert "Limits.max_depth" in error.value.reason


@pytest.mark.parametrize("text", ["text", "null"])  # "null" and a float: the walk checks
def test_hinted_new_items_in_the_head_are_the_stores_own_copies(text: str) -> None:
    old = {"log": [{"a": [1]}], "n": 0, "pad": "x" * 2000}
    first = commit(EMPTY_HEAD, old)
    item = {"b": [2.5, None, text], "c": {"d": -0.0}}
    new = {"log": [old["log"][0], item], "n": 1, "pad": old["pad"]}
    plan = commit(first.head, new, prefix_hint=("log", 1))
    check(plan, old, new)
    assert sorted(op["path"] for op in document(plan)) == ["/log/-", "/n"]
    item["b"].append(3)  # the caller goes on mutating its object
    item["c"]["d"] = 1
    assert same(plan.head.state["log"][1], {"b": [2.5, None, text], "c": {"d": -0.0}})


def test_a_prefix_hint_on_an_array_the_stdlib_encodes_stores_the_whole_state() -> None:
    # An integer beyond 64 bits makes the codec encode the array with the stdlib, whose
    # floats read otherwise than orjson's: appended items must not be joined in orjson's.
    old = {"log": [-(2**63) - 1]}
    new = {"log": [-(2**63) - 1, 6.103515625e-05]}
    first = commit(EMPTY_HEAD, old)
    check(commit(first.head, new, prefix_hint=("log", 1)), old, new)


def test_a_prefix_hint_the_base_contradicts_is_ignored() -> None:
    old = {"log": [1, 2, 3]}
    new = {"log": [9, 2, 3, 4]}  # not an append: the hint's length is wrong for the base
    first = commit(EMPTY_HEAD, old)
    check(commit(first.head, new, prefix_hint=("log", 2)), old, new)


@pytest.mark.parametrize(("before", "after"), [(1, 1.0), (1, True), (0.0, -0.0), (True, 1)])
def test_members_equal_by_eq_but_not_the_same_are_written(before: Any, after: Any) -> None:
    old = {"a": [before, {"x": before}], "b": "kept"}
    new = {"a": [after, {"x": after}], "b": "kept"}
    first = commit(EMPTY_HEAD, old)
    plan = commit(first.head, new)
    check(plan, old, new)
    assert plan.checksum != first.checksum


def test_a_reordered_nested_object_is_written() -> None:
    old = {"a": {"x": 1, "y": 2}, "b": 1}
    new = {"a": {"y": 2, "x": 1}, "b": 1}
    first = commit(EMPTY_HEAD, old)
    check(commit(first.head, new), old, new)


@pytest.mark.parametrize("bad", [math.nan, math.inf, uuid.UUID(int=1)])
def test_a_value_that_encodes_like_the_old_one_is_refused(bad: Any) -> None:
    """orjson writes NaN as null and a UUID as its text: neither may pass as unchanged."""
    old = {"a": None if isinstance(bad, float) else str(bad), "log": [None, "x"]}
    first = commit(EMPTY_HEAD, old)
    with pytest.raises(InvalidValueError) as member:
        commit(first.head, {**old, "a": bad})
    assert member.value.path == "/a"
    if isinstance(bad, float):
        # In an array's old items, found as "appended" by their encoding alone.
        with pytest.raises(InvalidValueError) as item:
            commit(first.head, {**old, "log": [bad, "x", "y"]})
        assert item.value.path == "/log/0"


def test_an_open_snapshot_head_is_rewritten_from_its_parent() -> None:
    base = {"log": ["a"], "n": 1}
    first = commit(EMPTY_HEAD, base)
    policy = SnapshotPolicy(interval=1)  # every step a snapshot: the rewrite is one too
    opened = plan_commit(
        RUN, first.head, {"log": ["a", "b"], "n": 1}, step=1, keep_open=True, policy=policy
    )
    assert opened.kind == "snapshot"
    sealed = plan_commit(
        RUN, opened.head, {"log": ["a", "b", "c"], "n": 2}, step=1, keep_open=False, policy=policy
    )
    assert sealed.kind == "snapshot"
    check(sealed, base, {"log": ["a", "b", "c"], "n": 2})
    with pytest.raises(InvalidValueError) as refused:
        plan_commit(
            RUN,
            opened.head,
            {"log": ["a", math.nan], "n": 1},
            step=1,
            keep_open=True,
            policy=policy,
        )
    assert refused.value.path == "/log/1"


def test_v2_checksums_prove_the_same_as_v1() -> None:
    state = {"a": [1, 2], "b": {"c": "d"}}
    digest, _ = Members.of(state).checksum, None
    assert matches(state, digest)[0]
    assert not matches({"a": [1, 2], "b": {"c": "e"}}, digest)[0]
    assert not matches({"b": {"c": "d"}, "a": [1, 2]}, digest)[0]  # order is part of it
    # Rows written before v2 hold sha256 of the whole encoding: still verified.
    legacy = hashlib.sha256(encode_trusted(state)).digest()
    assert matches(state, legacy)[0]
    assert matches([1, 2], hashlib.sha256(b"[1,2]").digest())[0]


def row_of(plan: Plan) -> dict[str, Any]:
    """The step row the backends store for ``plan``, as the readers get it."""
    return {
        "step": plan.step,
        "parent_step": plan.parent_step,
        "kind": plan.kind,
        "is_open": plan.is_open,
        "codec": plan.stored.codec,
        "payload": plan.stored.data,
        "write_version": plan.write_version,
        "raw_bytes": plan.raw_bytes,
        "checksum": plan.checksum,
    }


def test_a_rebuilt_head_is_verified_and_keeps_its_members() -> None:
    first = commit(EMPTY_HEAD, {"log": ["a"], "n": 1})
    second = commit(first.head, {"log": ["a", "b"], "n": 2})
    rows = [row_of(first), row_of(second)]
    head = rebuild(RUN, rows)
    assert head.state == {"log": ["a", "b"], "n": 2}
    assert head.members is not None
    assert head.members.checksum == second.checksum
    grown = {"log": ["a", "b", "c"], "n": 2}
    check(commit(head, grown), head.state, grown)
    rows[-1]["checksum"] = first.checksum
    with pytest.raises(CorruptDataError, match="step 1: rebuilt state does not match"):
        rebuild(RUN, rows)


def slow_plan(head: Head, state: Any) -> Plan:
    """The same commit planned without cached members or their fast paths: the general
    diff, validated op by op."""
    with mock.patch.object(plan_module, "_member_delta", return_value=None):
        return commit(head, state)


@PROPERTY
@given(objects.filter(bool), st.data())
def test_members_replaced_whole_store_what_the_general_path_stores(
    old: dict[str, Any], data: st.DataObject
) -> None:
    """The fast path's ``replace`` ops, written from encodings: the same state, checksum
    and head as the general diff of the same commit."""
    keys = list(old)
    picked = data.draw(st.lists(st.sampled_from(keys), min_size=1, unique=True))
    new = {**old, **{key: data.draw(values) for key in picked}}
    first = commit(EMPTY_HEAD, old)
    fast = commit(first.head, new)
    check(fast, old, new)
    slow = slow_plan(first.head, new)
    assert fast.checksum == slow.checksum
    assert same(fast.head.state, slow.head.state)
    assert fast.state_bytes == slow.state_bytes


class Level(enum.IntEnum):
    HIGH = 1


class Tag(enum.StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        (Level.HIGH, "/a"),
        (Tag.RED, "/a"),
        ([1, Level.HIGH], "/a/1"),
        ({"t": Tag.RED}, "/a/t"),
        ({"x": (1, 2)}, "/a/x"),
        ([0.5, math.nan], "/a/1"),
        ({"x": [math.inf]}, "/a/x/0"),
    ],
)
def test_a_replaced_member_is_validated_like_any_new_value(bad: Any, path: str) -> None:
    """orjson writes enums as their values and tuples as arrays: a member replaced whole
    is still refused for them, with the path of the bad value."""
    old = {"a": 0, "b": "kept"}
    first = commit(EMPTY_HEAD, old)
    with pytest.raises(InvalidValueError) as error:
        commit(first.head, {**old, "a": bad})
    assert error.value.path == path


def test_a_replaced_member_deeper_than_the_limit_is_refused() -> None:
    limits = Limits(max_depth=4)
    old = {"a": 0, "b": "kept"}
    first = commit(EMPTY_HEAD, old, limits=limits)
    commit(first.head, {**old, "a": [[[1]]]}, limits=limits)  # 4 levels with the state
    with pytest.raises(InvalidValueError) as error:
        commit(first.head, {**old, "a": [[[[1]]]]}, limits=limits)
    assert "Limits.max_depth" in error.value.reason


def test_a_member_replaced_whole_is_the_stores_copy_around_the_callers_scalars() -> None:
    """The head holds its own containers for a member replaced whole (the caller may go
    on mutating its object), around the caller's very strings and numbers, so that the
    next commit's == of the member, while the caller keeps it, meets identical scalars."""
    old = {"n": 1, "plan": {"steps": ["a", "b"], "cost": 1.5}, "pad": "x" * 2000}
    first = commit(EMPTY_HEAD, old)
    text = "".join(["step ", "c"])  # a str object of its own, not an interned constant
    value = {"steps": [text, "d"], "cost": 2.25, "meta": {"k": -0.0}}
    new = {**old, "plan": value}
    plan = commit(first.head, new)
    check(plan, old, new)
    assert document(plan) == [{"op": "replace", "path": "/plan", "value": value}]
    held = plan.head.state["plan"]
    assert held is not value
    assert held["steps"] is not value["steps"]
    assert held["meta"] is not value["meta"]
    assert held["steps"][0] is text
    assert held["cost"] is value["cost"]
    value["steps"].append("e")  # the caller goes on mutating its object
    value["meta"]["k"] = 1
    assert same(held, {"steps": ["step c", "d"], "cost": 2.25, "meta": {"k": -0.0}})


def test_a_small_member_replaced_whole_is_one_replace_op() -> None:
    """A small container replaced is one op written from its encoding, not a diff; a
    large one is still diffed (its delta stays small)."""
    big = [f"line {i}" for i in range(400)]
    old = {"n": 1, "plan": ["a", "b", "c"], "log": big}
    first = commit(EMPTY_HEAD, old)
    plan = commit(first.head, {**old, "plan": ["d", "e"], "log": [*big[:-1], "last"]})
    assert plan.kind == "delta"
    assert document(plan) == [
        {"op": "replace", "path": "/plan", "value": ["d", "e"]},
        {"op": "replace", "path": "/log/399", "value": "last"},
    ]


def test_a_small_change_to_a_member_that_is_most_of_the_state_stays_a_small_delta() -> None:
    """A container over a quarter of the state is diffed, not replaced whole: its replace
    op would be about the state's size and turn the step into a snapshot."""
    old = {"v": 1, "checkpoint": {f"channel_{i}": f"version {i}" for i in range(20)}}
    first = commit(EMPTY_HEAD, old)
    new = {"v": 1, "checkpoint": {**old["checkpoint"], "channel_3": "version 99"}}
    plan = commit(first.head, new)
    assert plan.kind == "delta"
    assert document(plan) == [
        {"op": "replace", "path": "/checkpoint/channel_3", "value": "version 99"}
    ]
    check(plan, old, new)


def test_the_new_head_keeps_the_callers_scalars_and_its_own_containers() -> None:
    """Scalars are immutable, so sharing them is exact (and lets the next commit skip
    their strict check); containers stay the store's, whatever the caller does next."""
    old = {"s": "text " * 50, "n": 1.0, "l": [1, 2], "d": {"k": "v"}}
    first = commit(EMPTY_HEAD, old)
    new = {**old, "s": "other " * 50, "l": [1, 2], "d": {"k": "w"}}
    plan = commit(first.head, new)
    check(plan, old, new)
    head = plan.head.state
    assert head["s"] is new["s"]
    assert head["n"] is new["n"]
    assert head["l"] is not new["l"]
    assert head["d"] is not new["d"]
    new["l"].append(3)
    new["d"]["k"] = "x"
    assert head == {**old, "s": "other " * 50, "d": {"k": "w"}}
    # The next state shares the head's scalars: 1.0 stays 1.0, never taken for 1.
    after = {**new, "l": [1, 2], "d": {"k": "w"}, "n": 1}
    check(commit(plan.head, after), head, after)


def test_the_head_takes_only_exact_scalars_from_the_caller() -> None:
    """An unchanged member that is another, equal object than the head's is taken from
    the caller only when it is a plain str, number, bool or None: an IntEnum equal to
    the head's int encodes like it, and the head holds what was stored, never it."""

    class Level(enum.IntEnum):
        ONE = 1

    old = {"n": 1, "s": "text " * 20, "l": [1]}
    first = commit(EMPTY_HEAD, old)
    new = {"n": Level.ONE, "s": "text " * 20, "l": [1]}
    try:
        plan = commit(first.head, new)
    except InvalidValueError:
        return  # refusing the enum is as good
    stored = document(plan)
    rebuilt = stored if plan.kind == "snapshot" else apply(first.head.state, stored)
    assert type(plan.head.state["n"]) is int
    assert type(rebuilt["n"]) is int
    assert plan.head.state == rebuilt
    # The equal str that is another object is the caller's (see the test above).
    assert plan.head.state["s"] is new["s"]


@PROPERTY
@given(st.data())
def test_any_changed_members_hint_stores_what_the_plan_without_it_stores(
    data: st.DataObject,
) -> None:
    """The run loop's ``changed`` hint (which members differ) replaces the plan's own
    ``==`` of the members; whatever it says, right or wrong, the plan stores exactly the
    new state, with the checksum and head the plan without a hint gives."""
    old = data.draw(objects)
    new = data.draw(edited(old))
    first = commit(EMPTY_HEAD, old)
    hint: list[bool] | None
    if type(new) is dict and list(new) == list(old):
        right = [a != b for a, b in zip(new.values(), old.values(), strict=True)]
        hint = data.draw(st.one_of(st.just(right), st.lists(st.booleans(), max_size=8)))
    else:
        hint = data.draw(st.lists(st.booleans(), max_size=8))
    plain = commit(first.head, new)
    hinted = commit(first.head, new, changed=hint)
    check(hinted, old, new)
    assert hinted.checksum == plain.checksum
    assert same(hinted.head.state, plain.head.state)
    assert hinted.state_bytes == plain.state_bytes


@PROPERTY
@given(st.data())
def test_the_flagged_members_encodings_store_what_the_plan_without_them_stores(
    data: st.DataObject,
) -> None:
    """The run loop hands the plan its strict encodings of the members its hint flags
    (made for its own scans), which the plan then does not encode again: with any hint,
    right or wrong, the plan stores exactly the new state, with the checksum, head and
    bytes the plan without hint or encodings gives."""
    old = data.draw(objects)
    new = data.draw(edited(old))
    first = commit(EMPTY_HEAD, old)
    if type(new) is not dict or list(new) != list(old):
        return
    right = [a != b for a, b in zip(new.values(), old.values(), strict=True)]
    hint = data.draw(
        st.one_of(st.just(right), st.lists(st.booleans(), min_size=len(new), max_size=len(new)))
    )
    flagged = [value for value, flag in zip(new.values(), hint, strict=True) if flag]
    encodings = encodings_of(flagged)
    plain = commit(first.head, new)
    given_bytes = commit(first.head, new, changed=hint, encoded=encodings)
    check(given_bytes, old, new)
    assert given_bytes.checksum == plain.checksum
    assert same(given_bytes.head.state, plain.head.state)
    assert given_bytes.state_bytes == plain.state_bytes
    assert document(given_bytes) == document(plain)


def test_encodings_that_are_not_one_a_flagged_member_are_ignored() -> None:
    """Encodings of another count than the flagged members (or with a hint the plan
    drops) are not used: the plan encodes the members itself."""
    old = {"a": [1, 2], "b": "x", "c": 1}
    new = {"a": [1, 3], "b": "y", "c": 1}
    first = commit(EMPTY_HEAD, old)
    plain = commit(first.head, new)
    for hint, encodings in (
        ([True, True, False], [b'"y"']),
        ([True, True, False], [b"[1,3]", b'"y"', b"1"]),
        ([2, 1, 0], [b'"z"', b"[9]"]),
    ):
        planned = commit(first.head, new, changed=hint, encoded=encodings)
        check(planned, old, new)
        assert document(planned) == document(plain)


def test_a_hint_of_ints_that_are_not_booleans_is_ignored() -> None:
    """The hint becomes one 0/1 byte a member; other ints (true, but not 1) would break
    the masks built from it, so such a hint is dropped for the plan's own comparison."""
    old = {"a": [1, 2], "b": "x", "c": 1, "d": {"k": 1}}
    new = {"a": [1, 3], "b": "y", "c": 1, "d": {"k": 1.0}}
    first = commit(EMPTY_HEAD, old)
    plain = commit(first.head, new)
    for hint in ([2, 2, 0, 0], [0, 0, 0, 3], [1, 1, 0, 256]):
        hinted = commit(first.head, new, changed=hint)
        check(hinted, old, new)
        assert hinted.checksum == plain.checksum
        assert document(hinted) == document(plain)


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=80))
def test_the_members_to_check_strictly_are_the_unchanged_ones_not_shared(
    flags: list[tuple[bool, bool, bool]],
) -> None:
    """The masks combined as integers give, member by member, "does not differ and is
    not an identical scalar": an identical container is checked like any other."""
    differs = bytes(d for d, _, _ in flags)
    identical = bytes(i for _, i, _ in flags)
    nested = bytes(n for _, _, n in flags)
    expected = bytes(not d and not (i and not n) for d, i, n in flags)
    assert plan_module._unchecked(differs, identical, nested) == expected


def test_a_member_a_hint_calls_unchanged_is_still_written() -> None:
    """A wrong hint cannot hide a change: the strict check of the members it calls
    unchanged finds that their encodings differ."""
    old = {"a": [1, 2], "b": "x", "c": 1}
    new = {"a": [1, 3], "b": "y", "c": 1}
    first = commit(EMPTY_HEAD, old)
    check(commit(first.head, new, changed=[False, False, False]), old, new)
    check(commit(first.head, new, changed=[False, True, False]), old, new)
    check(commit(first.head, new, changed=[True, True, True]), old, new)
