"""Tests for exact JSON Patch deltas: diff/apply round trips, sizes, and refused patches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentckpt._core.codec import decode, encode, same
from agentckpt._core.delta import Patch, apply, diff
from agentckpt.errors import InvalidPatchError
from tests.unit.core import strategies

SPECIAL_TEXT = ["", "\x00", "\\u0000", "\U0001f600", "~", "/", "~1", "a/b~0", "-", "0"]
# Values that == confuses with each other, so diffs must tell them apart.
LOOKALIKES: list[Any] = [0, 0.0, -0.0, False, 1, 1.0, True, None, "", 2**64, 2**200, 5e-324]

texts = strategies.texts(SPECIAL_TEXT, text_size=8)
json_values = strategies.json_values(SPECIAL_TEXT, LOOKALIKES, text_size=8)


@st.composite
def edited(draw: st.DrawFn, value: Any) -> Any:
    """A variant of ``value`` with random local edits, so diffs have structure to find."""
    action = draw(st.integers(0, 9))
    if action == 0:
        return draw(json_values)
    if action == 1:
        return draw(st.sampled_from(LOOKALIKES))
    if type(value) is dict:
        entries = []
        for key, item in value.items():
            fate = draw(st.integers(0, 5))
            if fate == 0:
                continue  # dropped
            entries.append((key, draw(edited(item)) if fate == 1 else item))
        if draw(st.integers(0, 4)) == 0:
            entries = draw(st.permutations(entries))
        entries += draw(st.lists(st.tuples(texts, json_values), max_size=2))
        return dict(entries)
    if type(value) is list:
        items = [draw(edited(item)) if draw(st.integers(0, 3)) == 0 else item for item in value]
        tail = draw(st.integers(0, 4))
        if tail == 1:
            items += draw(st.lists(json_values, min_size=1, max_size=3))
        elif tail == 2 and items:
            items = items[: draw(st.integers(0, len(items) - 1))]
        elif tail == 3 and items:  # sliding window
            items = items[draw(st.integers(1, len(items))) :]
            items += draw(st.lists(json_values, max_size=3))
        return items
    return value


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    old = draw(json_values)
    if draw(st.integers(0, 4)) == 0:
        return old, draw(json_values)
    return old, draw(edited(old))


PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def assert_round_trip(old: Any, new: Any) -> Patch:
    patch = diff(old, new)
    assert same(apply(old, patch), new)
    return patch


# --- properties ----------------------------------------------------------------------------


@PROPERTY
@given(pairs())
def test_apply_diff_gives_exactly_new(pair: tuple[Any, Any]) -> None:
    old, new = pair
    old_bytes, new_bytes = encode(old), encode(new)
    patch = diff(old, new)
    assert (patch == []) == same(old, new)
    result = apply(old, patch)
    assert same(result, new)
    assert diff(result, new) == []
    # Neither input was touched, by diff or by apply.
    assert encode(old) == old_bytes
    assert encode(new) == new_bytes
    # The patch as it comes back from storage works the same.
    stored = decode(encode(patch))
    assert same(apply(decode(old_bytes), stored), new)
    # In place gives the same result, and so does a patch given away (its values used as
    # they are, as the store does with a delta it has just decoded).
    assert same(apply(decode(old_bytes), stored, in_place=True), new)
    assert same(apply(decode(old_bytes), decode(encode(patch)), consume=True), new)


def test_a_consumed_patch_gives_its_values_to_the_result() -> None:
    value = {"role": "user", "content": "hi"}
    result = apply(
        {"messages": []}, [{"op": "add", "path": "/messages/-", "value": value}], consume=True
    )
    assert result == {"messages": [value]}
    assert result["messages"][0] is value
    copied = apply({"messages": []}, [{"op": "add", "path": "/messages/-", "value": value}])
    assert copied == result
    assert copied["messages"][0] is not value


@PROPERTY
@given(pairs())
def test_mutating_the_result_does_not_corrupt_the_patch(pair: tuple[Any, Any]) -> None:
    old, new = pair
    # The result shares unchanged subtrees with old (by design), and old shares objects with
    # new here; a decoded copy of old, as resuming from storage gives, shares nothing.
    old = decode(encode(old))
    patch = diff(old, new)
    patch_bytes, new_bytes = encode(patch), encode(new)
    result = apply(old, patch)
    scribble(result)
    assert encode(patch) == patch_bytes
    assert encode(new) == new_bytes


def scribble(value: Any) -> None:
    """Mutate every container inside ``value``."""
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            pending.extend(item.values())
            item["scribbled"] = True
        elif type(item) is list:
            pending.extend(item)
            item.append("scribbled")


# --- the append case -----------------------------------------------------------------------


def message(i: int) -> dict[str, Any]:
    return {
        "role": "assistant" if i % 2 else "user",
        "content": f"this is message number {i}, with some text to give it weight. " * 3,
        "tool_calls": None,
        "meta": {"tokens": 40 + i % 7, "ok": True},
    }


@pytest.mark.parametrize("appended", [1, 3])
def test_append_delta_size_is_independent_of_history(appended: int) -> None:
    added = [message(100_000 + j) for j in range(appended)]
    sizes = {}
    for n in (10, 1000):
        history = [message(i) for i in range(n)]
        # The stored state is a decoded copy: nothing is shared with the live state.
        old = decode(encode({"run": "r1", "step": n, "messages": history}))
        new = {"run": "r1", "step": n, "messages": [*history, *added]}
        patch = diff(old, new)
        assert patch == [{"op": "add", "path": "/messages/-", "value": m} for m in added]
        assert same(apply(old, patch), new)
        sizes[n] = len(encode(patch))
        assert sizes[n] < len(encode(new)) // 3
    assert sizes[10] == sizes[1000]
    assert sizes[1000] * 50 < len(encode([message(i) for i in range(1000)]))


def test_append_to_root_list() -> None:
    old = [1, 2]
    assert diff(old, [1, 2, 3, [4]]) == [
        {"op": "add", "path": "/-", "value": 3},
        {"op": "add", "path": "/-", "value": [4]},
    ]


@pytest.mark.parametrize(("kept", "dropped"), [(0, 1), (0, 4), (1, 3)])
def test_sliding_window_delta_size_is_independent_of_history(kept: int, dropped: int) -> None:
    # kept=1: a system prompt stays at the head while old turns are dropped after it.
    added = [message(100_000 + j) for j in range(2)]
    sizes = {}
    for n in (10, 1000):
        history = [message(i) for i in range(n)]
        old = decode(encode({"messages": history}))
        new = {"messages": [*history[:kept], *history[kept + dropped :], *added]}
        patch = diff(old, new)
        assert patch == [{"op": "remove", "path": f"/messages/{kept}"}] * dropped + [
            {"op": "add", "path": "/messages/-", "value": m} for m in added
        ]
        assert same(apply(old, patch), new)
        sizes[n] = len(encode(patch))
    assert sizes[10] == sizes[1000]


def test_sliding_window_with_repeated_items() -> None:
    tool = {"r": "tool", "c": "same output " * 5}
    old = [{"r": "system"}, tool, tool, tool, tool, tool, {"r": "user", "c": "x" * 60}]
    new = [old[0], *old[3:], {"r": "user", "c": "y" * 60}]
    patch = assert_round_trip(old, new)
    # Which two of the equal items go is immaterial; the delta stays small either way.
    assert [op["op"] for op in patch] == ["remove", "remove", "add"]


def test_window_search_gives_up_on_many_repeats() -> None:
    old = [{"k": 0}] + [{"k": 1}] * 20
    new = [{"k": 1}] * 10 + [{"k": 2}]
    assert_round_trip(old, new)


def test_unchanged_head_keeps_element_wise_diff() -> None:
    a, b, c = ({"k": letter * 40} for letter in "abc")
    assert diff([a, b, a], [a, c, a]) == [{"op": "replace", "path": "/1/k", "value": "c" * 40}]


def test_changed_element_in_long_list_is_a_small_delta() -> None:
    old = [message(i) for i in range(500)]
    new = decode(encode(old))
    new[250]["meta"]["tokens"] = 1
    assert diff(old, new) == [{"op": "replace", "path": "/250/meta/tokens", "value": 1}]
    assert_round_trip(old, new)


# --- edge cases ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (1, 2),
        (1, 1.0),
        (1, True),
        (0.0, -0.0),
        (None, 0),
        ("a", ["a"]),
        (2**64, 2**64 + 1),
    ],
)
def test_root_scalars_are_replaced(old: Any, new: Any) -> None:
    patch = assert_round_trip(old, new)
    assert patch == [{"op": "replace", "path": "", "value": new}]
    assert type(patch[0]["value"]) is type(new)


def test_identical_values_give_empty_patch() -> None:
    assert diff({"a": [1, 2.0]}, {"a": [1, 2.0]}) == []
    assert apply({"a": 1}, []) == {"a": 1}


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        ({}, {"a": 1}, [{"op": "add", "path": "/a", "value": 1}]),
        ([], [None], [{"op": "add", "path": "/-", "value": None}]),
        ({"a": 1}, {}, [{"op": "remove", "path": "/a"}]),
        ({"a": {}}, {"a": []}, [{"op": "replace", "path": "/a", "value": []}]),
        ({"a": [1]}, {"a": {"0": 1}}, [{"op": "replace", "path": "/a", "value": {"0": 1}}]),
        ({"a": 1}, {"a": None}, [{"op": "replace", "path": "/a", "value": None}]),
        ({"a": None}, {}, [{"op": "remove", "path": "/a"}]),
        ({}, {"a": None}, [{"op": "add", "path": "/a", "value": None}]),
        ({"a": [0.0]}, {"a": [-0.0]}, [{"op": "replace", "path": "/a/0", "value": -0.0}]),
        ({"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
        ({"a/b": 1}, {"a/b": 2}, [{"op": "replace", "path": "/a~1b", "value": 2}]),
        ({"~k": 1}, {"~k": 2}, [{"op": "replace", "path": "/~0k", "value": 2}]),
        ({"~1": {"/": 1}}, {"~1": {"/": 2}}, [{"op": "replace", "path": "/~01/~1", "value": 2}]),
        ({"": 1}, {"": 2}, [{"op": "replace", "path": "/", "value": 2}]),
        (
            {"a": 1, "b": 2, "c": 3},
            {"a": 1, "c": 3, "d": 4},
            [{"op": "remove", "path": "/b"}, {"op": "add", "path": "/d", "value": 4}],
        ),
        (
            ["a" * 40, "b" * 40, "c" * 40, "d" * 40, "e" * 40],
            ["a" * 40, "b" * 40, "c" * 40],
            [{"op": "remove", "path": "/4"}, {"op": "remove", "path": "/3"}],
        ),
        # Replacing the small list is shorter than two removes.
        ([1, 2, 3, 4, 5], [1, 2, 3], [{"op": "replace", "path": "", "value": [1, 2, 3]}]),
    ],
)
def test_small_diffs(old: Any, new: Any, patch: Patch) -> None:
    assert diff(old, new) == patch
    assert same(apply(old, patch), new)


def test_key_reorder_replaces_the_object() -> None:
    old = {"x": {"a": 1, "b": 2}, "y": 0}
    new = {"x": {"b": 2, "a": 1}, "y": 0}
    assert diff(old, new) == [{"op": "replace", "path": "/x", "value": {"b": 2, "a": 1}}]
    assert list(apply(old, diff(old, new))["x"]) == ["b", "a"]


def test_readded_key_moves_to_the_end() -> None:
    old = {"a": 1, "b": 2}
    new = {"b": 2, "a": 1}
    assert_round_trip(old, new)
    old = {"a": 1, "b": 2, "c": 3}
    new = {"a": 1, "c": 3, "b": 2}
    assert list(apply(old, diff(old, new))) == ["a", "c", "b"]


def test_list_rewritten_entirely_is_replaced_when_smaller() -> None:
    old = [1, 2, 3, 4]
    new = ["w", "x", "y", "z"]
    assert diff(old, new) == [{"op": "replace", "path": "", "value": new}]


def test_list_shrink_with_changes() -> None:
    old = [{"a": 1, "long": "x" * 50}, {"b": 2, "long": "y" * 50}, 3, 4]
    new = [{"a": 9, "long": "x" * 50}, {"b": 2, "long": "y" * 50}]
    assert diff(old, new) == [
        {"op": "replace", "path": "/0/a", "value": 9},
        {"op": "remove", "path": "/3"},
        {"op": "remove", "path": "/2"},
    ]
    assert_round_trip(old, new)


def test_very_deep_values_are_replaced_whole() -> None:
    old: Any = "leaf"
    new: Any = "changed"
    for _ in range(700):
        old, new = [old], [new]
    assert diff(old, new) == [{"op": "replace", "path": "", "value": new}]
    assert same(apply(old, diff(old, new)), new)


def test_lookalike_elements_in_lists() -> None:
    assert_round_trip([1, 0.0, True], [1.0, -0.0, 1])
    assert_round_trip([{"a": 1}], [{"a": 1.0}])
    assert_round_trip([2**70, 1], [2**70, 1.0])


# --- apply: copying --------------------------------------------------------------------------


def test_apply_copies_only_the_modified_path() -> None:
    doc: dict[str, Any] = {
        "big": [message(i) for i in range(50)],
        "state": {"step": 1, "notes": ["n"]},
    }
    patch: Patch = [{"op": "replace", "path": "/state/step", "value": 2}]
    result = apply(doc, patch)
    assert result["state"]["step"] == 2
    assert doc["state"]["step"] == 1
    assert result is not doc
    assert result["state"] is not doc["state"]
    assert result["big"] is doc["big"]  # untouched subtree is shared, not copied
    assert result["state"]["notes"] is doc["state"]["notes"]


def test_apply_in_place_mutates() -> None:
    doc: dict[str, Any] = {"a": [1]}
    result = apply(doc, [{"op": "add", "path": "/a/-", "value": 2}], in_place=True)
    assert result is doc
    assert doc == {"a": [1, 2]}


def test_apply_in_place_still_copies_patch_values() -> None:
    value = {"x": [1]}
    patch = [{"op": "add", "path": "/v", "value": value}]
    result = apply({}, patch, in_place=True)
    result["v"]["x"].append(2)
    assert value == {"x": [1]}


def test_several_ops_on_one_container_copy_it_once() -> None:
    doc = {"a": {"b": 1}}
    patch: Patch = [
        {"op": "add", "path": "/a/c", "value": 2},
        {"op": "add", "path": "/a/d", "value": 3},
        {"op": "remove", "path": "/a/b"},
    ]
    assert apply(doc, patch) == {"a": {"c": 2, "d": 3}}
    assert doc == {"a": {"b": 1}}


def test_apply_root_replacement_is_a_copy() -> None:
    value = [1, [2]]
    result = apply({"old": 1}, [{"op": "replace", "path": "", "value": value}])
    assert result == value
    result[1].append(3)
    assert value == [1, [2]]


def test_rfc6902_add_semantics() -> None:
    assert apply([1, 3], [{"op": "add", "path": "/1", "value": 2}]) == [1, 2, 3]
    assert apply([1], [{"op": "add", "path": "/1", "value": 2}]) == [1, 2]
    assert apply({"a": 1, "b": 2}, [{"op": "add", "path": "/a", "value": 3}]) == {"a": 3, "b": 2}
    assert apply({"a": 1}, [{"op": "add", "path": "", "value": [1]}]) == [1]
    assert apply({"a~b/c": 1}, [{"op": "remove", "path": "/a~0b~1c"}]) == {}


# --- apply: refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "op", "text"),
    [
        ({"a": 1}, {"op": "move", "from": "/a", "path": "/b"}, "unknown op"),
        ({"a": 1}, {"op": "test", "path": "/a", "value": 1}, "unknown op"),
        ({"a": 1}, {"path": "/a"}, "unknown op"),
        ({"a": 1}, {"op": ["add"], "path": "/a", "value": 1}, "unknown op"),
        ({"a": 1}, {"op": "add", "path": 5, "value": 1}, "path must be a str"),
        ({"a": 1}, {"op": "add", "path": "/b"}, "no 'value'"),
        ({"a": 1}, {"op": "remove", "path": ""}, "cannot remove the whole document"),
        ({"a": 1}, {"op": "remove", "path": "a"}, "malformed pointer"),
        ({"a": 1}, {"op": "remove", "path": "/a~2"}, "malformed pointer"),
        ({"a": 1}, {"op": "remove", "path": "/a~"}, "malformed pointer"),
        ({"a": 1}, {"op": "remove", "path": "/b"}, "no member 'b'"),
        ({"a": 1}, {"op": "replace", "path": "/b", "value": 1}, "no member 'b'"),
        ({"a": {}}, {"op": "add", "path": "/x/y", "value": 1}, "no member 'x'"),
        ({"a": {}}, {"op": "add", "path": "/a/x/y", "value": 1}, "at '/a'"),
        ({"a": [0]}, {"op": "replace", "path": "/a/1", "value": 1}, "index 1 is out of range"),
        ({"a": [0]}, {"op": "add", "path": "/a/2", "value": 1}, "index 2 is out of range"),
        ({"a": [0]}, {"op": "remove", "path": "/a/-"}, "'-' is not an array index"),
        ({"a": [0]}, {"op": "replace", "path": "/a/01", "value": 1}, "not an array index"),
        ({"a": [0]}, {"op": "replace", "path": "/a/-1", "value": 1}, "not an array index"),
        ({"a": [[0]]}, {"op": "remove", "path": "/a/5/0"}, "index 5 is out of range"),
        ({"a": [[0]]}, {"op": "remove", "path": "/a/x/0"}, "'x' is not an array index"),
        ({"a": 1}, {"op": "add", "path": "/a/b", "value": 1}, "is a int"),
        ({"a": "s"}, {"op": "remove", "path": "/a/b/c"}, "is a str"),
        (5, {"op": "add", "path": "/a", "value": 1}, "is a int"),
        ({"a": 1}, ["add", "/a"], "an op is a dict"),
    ],
)
def test_bad_patches_are_refused_with_op_index_and_path(doc: Any, op: Any, text: str) -> None:
    doc_bytes = encode(doc)
    good = {"op": "add", "path": "/zz", "value": 0} if type(doc) is dict else None
    patch = [good, op] if good else [op]
    index = len(patch) - 1
    with pytest.raises(InvalidPatchError) as info:
        apply(doc, patch)
    message = str(info.value)
    assert f"patch op {index}" in message
    assert text in message
    if type(op) is dict and type(op.get("path")) is str:
        assert repr(op["path"]) in message
    assert encode(doc) == doc_bytes  # a failed apply leaves the document alone


def test_patch_must_be_a_list() -> None:
    with pytest.raises(InvalidPatchError, match="list of ops"):
        apply({}, {"op": "add", "path": "/a", "value": 1})  # type: ignore[arg-type]
