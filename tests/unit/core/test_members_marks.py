"""A changed object member is re-hashed from its mark (where its last change ended): the
digests and checksum are always those of hashing the new members whole."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt._core.checksums import Members
from agentckpt._core.codec import encode_trusted


def _message(i: int, text: str = "") -> dict[str, Any]:
    return {"role": "user" if i % 2 else "assistant", "content": f"message {i} {text}" * 3}


def _state(messages: list[Any], steps: int = 25, head: str = "h") -> dict[str, Any]:
    return {
        "id": f"checkpoint-{len(messages)}",
        "values": {"head": head, "messages": messages, "remaining_steps": steps},
    }


def _check(members: Members, state: dict[str, Any]) -> Members:
    """The members of ``state`` replaced from ``members``, checked against hashing whole."""
    changes = {
        index: (encode_trusted(value), None)
        for index, (value, old) in enumerate(zip(state.values(), members.values, strict=True))
        if encode_trusted(value) != old
    }
    replaced = members.replaced(changes)
    whole = Members.of(state)
    assert replaced.values == whole.values
    assert replaced.parts == whole.parts
    assert replaced.checksum == whole.checksum
    return replaced


def test_appends_to_a_nested_list_hash_only_what_follows_the_mark() -> None:
    messages = [_message(i) for i in range(400)]
    members = Members.of(_state(messages))
    assert members.marks is None
    for i in range(400, 410):
        messages = [*messages, _message(i)]
        members = _check(members, _state(messages))
        assert members.marks is not None
        mark = members.marks[1]
        assert mark is not None
        value = members.values[1]
        # The mark stops before the list's closing bracket and what follows it.
        assert mark.offset <= len(value) - len(b'],"remaining_steps":25}')
        assert mark.offset > len(value) - 2 * len(encode_trusted(_message(i)))
        assert mark.hasher.copy().digest() == hashlib.sha256(value[: mark.offset]).digest()


def test_changes_anywhere_are_hashed_exactly() -> None:
    messages = [_message(i) for i in range(300)]
    members = Members.of(_state(messages))
    members = _check(members, _state([*messages, _message(300)]))
    # A change before the mark (the first message), after it (the tail), both, a shorter
    # member, and back to the mark's own prefix.
    edited = [_message(0, "edited"), *messages[1:], _message(300)]
    members = _check(members, _state(edited))
    members = _check(members, _state(edited, steps=24))
    members = _check(members, _state(edited[:10], steps=3, head="x"))
    members = _check(members, _state([*messages, _message(300), _message(301)]))
    members = _check(members, _state([*messages, _message(300), _message(301), _message(302)]))


def test_a_small_object_or_a_scalar_gets_no_mark() -> None:
    members = Members.of({"small": {"a": 1}, "n": 1, "big": {"m": [_message(i) for i in range(5)]}})
    replaced = members.replaced({0: (b'{"a":2}', None), 1: (b"2", None)})
    assert replaced.marks is None
    assert (
        replaced.checksum
        == Members.of(
            {"small": {"a": 2}, "n": 2, "big": {"m": [_message(i) for i in range(5)]}}
        ).checksum
    )


def test_a_member_that_becomes_an_array_or_a_scalar_drops_its_mark() -> None:
    messages = [_message(i) for i in range(200)]
    members = _check(Members.of(_state(messages)), _state([*messages, _message(200)]))
    assert members.marks is not None
    assert members.marks[1] is not None
    state: dict[str, Any] = {"id": "x", "values": [1, 2]}
    replaced = _check(members, state)
    assert replaced.marks is not None
    assert replaced.marks[1] is None
    assert members.marks[1] is not None  # the old members are unchanged


_texts = st.text(alphabet='ab]}",', max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 400), _texts), max_size=8))
def test_any_sequence_of_changes_hashes_like_the_whole(edits: list[tuple[int, int, str]]) -> None:
    messages = [_message(i) for i in range(250)]
    steps, head = 25, "h"
    members = Members.of(_state(messages))
    for kind, where, text in edits:
        if kind == 0:
            messages = [*messages, _message(len(messages), text)]
        elif kind == 1:
            index = where % len(messages)
            messages = [*messages[:index], _message(index, text), *messages[index + 1 :]]
        elif kind == 2:
            steps = where
        else:
            head = text
        members = _check(members, _state(messages, steps, head))
