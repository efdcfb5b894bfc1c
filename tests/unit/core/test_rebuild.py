"""Rebuilding a head from its rows: exact without the codec's 19-digit scan, and handed
over to a resuming caller with one copy of the state.

A verified rebuild reads the documents with orjson alone and lets the checksum prove the
state exact; an integer beyond 64 bits (which orjson reads as a float) must still come
back as that integer, through the exact rebuild the mismatch sends it to.
"""

from __future__ import annotations

import uuid
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentckpt._core import codec
from agentckpt._core import plan as plan_module
from agentckpt._core.codec import decode_unguarded, same
from agentckpt._core.compression import PLAIN
from agentckpt._core.plan import (
    EMPTY_HEAD,
    UNREAD,
    Head,
    Plan,
    hand_over,
    plan_commit,
    ready,
    rebuild,
)
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import CorruptDataError
from tests.unit.core import strategies
from tests.unit.core.test_delta import LOOKALIKES, PROPERTY, SPECIAL_TEXT, edited
from tests.unit.core.test_plan_members import row_of

RUN = uuid.UUID(int=18)
POLICY = SnapshotPolicy(interval=1000)
texts = strategies.texts(SPECIAL_TEXT, text_size=8)
values = strategies.json_values(SPECIAL_TEXT, LOOKALIKES, text_size=8)
objects = st.dictionaries(texts, values, max_size=6)


def _commit(head: Head, state: Any, *, keep_open: bool = False) -> Plan:
    step = 0 if head.step is None else head.step + 1
    return plan_commit(RUN, head, state, step=step, keep_open=keep_open, policy=POLICY)


def _chain(states: list[Any]) -> list[dict[str, Any]]:
    head, rows = EMPTY_HEAD, []
    for state in states:
        plan = _commit(head, state)
        rows.append(row_of(plan))
        head = plan.head
    return rows


@PROPERTY
@given(st.data())
def test_a_verified_rebuild_is_the_exact_state(data: st.DataObject) -> None:
    first = data.draw(objects)
    second = data.draw(edited(first))
    third = data.draw(edited(second))
    rows = _chain([first, second, third])
    head = rebuild(RUN, rows)
    assert same(head.state, third)
    assert same(rebuild(RUN, rows, verify=False).state, third)
    state, cached = hand_over(head)
    assert same(state, third)
    assert same(ready(cached).state, third)


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1, 2**200])
def test_integers_beyond_64_bits_come_back_as_integers(big: int) -> None:
    # In the snapshot, in a delta's value, and in a member the last delta does not touch.
    states = [
        {"big": big, "log": [1]},
        {"big": big, "log": [1, big]},
        {"big": big, "log": [1, big], "n": 3},
    ]
    rows = _chain(states)
    assert len(rows) == 3
    assert rows[-1]["kind"] == "delta"
    unguarded = mock.Mock(wraps=decode_unguarded)
    with mock.patch.object(plan_module, "decode_unguarded", unguarded):
        head = rebuild(RUN, rows)
    assert unguarded.called  # the fast read was tried first, its checksum refused it
    assert same(head.state, states[-1])
    assert type(head.state["big"]) is int
    assert head.state["log"][1] == big


def test_the_fast_read_does_not_scan_the_documents() -> None:
    rows = _chain([{"log": ["a"], "n": 1}, {"log": ["a", "b"], "n": 2}])
    exact = mock.Mock(wraps=codec.decode)
    with mock.patch.object(plan_module, "decode", exact):
        head = rebuild(RUN, rows)
    assert not exact.called
    assert head.state == {"log": ["a", "b"], "n": 2}


def test_corruption_is_still_named_with_its_step() -> None:
    rows = _chain([{"log": ["a"]}, {"log": ["a", "b"]}])
    bad = [rows[0], {**rows[1], "checksum": rows[0]["checksum"]}]
    with pytest.raises(CorruptDataError, match="step 1: rebuilt state does not match"):
        rebuild(RUN, bad)
    garbled = [{**rows[0], "codec": PLAIN, "payload": b"{nope"}, rows[1]]
    with pytest.raises(CorruptDataError, match="step 0: stored JSON document cannot be"):
        rebuild(RUN, garbled)


def test_a_handed_over_head_decodes_its_own_state_when_a_commit_needs_it() -> None:
    rows = _chain([{"log": [{"a": 1}], "n": 1}, {"log": [{"a": 1}, {"b": 2}], "n": 2}])
    head = rebuild(RUN, rows)
    state, cached = hand_over(head)
    assert state is head.state  # the caller owns the rebuilt state: no copy
    assert cached.state is UNREAD
    assert cached.members is head.members
    state["log"][0]["a"] = "changed by the caller"
    state["n"] = 99
    base = ready(cached)
    assert base.state == {"log": [{"a": 1}, {"b": 2}], "n": 2}
    assert ready(base) is base
    grown = {"log": [{"a": 1}, {"b": 2}, {"c": 3}], "n": 3}
    plan = _commit(base, grown)
    assert rebuild(RUN, [*rows, row_of(plan)]).state == grown


def test_an_open_delta_head_hands_out_a_copy() -> None:
    pad = "x" * 4096  # a state large enough for its small change to be a delta
    first = _commit(EMPTY_HEAD, {"log": [{"a": 1}], "pad": pad})
    second = _commit(first.head, {"log": [{"a": 1}, {"b": 2}], "pad": pad}, keep_open=True)
    assert second.kind == "delta"
    head = rebuild(RUN, [row_of(first), row_of(second)])
    assert head.parent_state == {"log": [{"a": 1}], "pad": pad}
    state, cached = hand_over(head)
    assert cached is head
    assert state == head.state
    assert state is not head.state
    state["log"][0]["a"] = "changed by the caller"
    assert head.parent_state == {"log": [{"a": 1}], "pad": pad}
    assert head.state == {"log": [{"a": 1}, {"b": 2}], "pad": pad}


def test_an_unverified_or_array_head_hands_out_a_copy() -> None:
    rows = _chain([{"log": ["a"]}])
    head = rebuild(RUN, rows, verify=False)
    state, cached = hand_over(head)
    assert cached is head
    assert state == head.state
    assert state is not head.state
    array = rebuild(RUN, _chain([[1, 2]]))
    state, cached = hand_over(array)
    assert cached is array
    assert state == [1, 2]
    assert state is not array.state
