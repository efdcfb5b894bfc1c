"""Members.of encodes all members in one pass, and falls back to one member at a time
when a member needs the stdlib encoder: both give the same members and checksum."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt._core.checksums import Members
from agentckpt._core.codec import encode_fast, encode_trusted
from tests.unit.core.strategies import json_values, texts

SPECIAL_TEXT = ["", "é", "\u2028", '"', "\\", "a\x00b", "😀"]
SPECIAL_SCALARS: list[Any] = [0, -0.0, 1.5e-5, 2**64, -(2**63) - 1, 1e300]
STATES = st.dictionaries(
    texts(SPECIAL_TEXT, text_size=8),
    json_values(SPECIAL_TEXT, SPECIAL_SCALARS, text_size=16),
    max_size=12,
)


def fields(members: Members) -> tuple[Any, ...]:
    digests = [None if p is None else p.copy().digest() for p in members.prefixes]
    return (
        members.keys,
        members.key_colons,
        members.values,
        members.parts,
        digests,
        members.checksum,
        members.length,
    )


@settings(max_examples=300, deadline=None)
@given(STATES)
def test_one_pass_and_member_by_member_agree(state: dict[str, Any]) -> None:
    members = Members.of(state)
    assert fields(members) == fields(Members._of_each(list(state), state))
    # And the encoding they join is one the codec reads back as the state.
    assert len(members.encoding()) == members.size()


def test_a_member_past_64_bits_takes_the_member_by_member_path() -> None:
    state = {"small": [1.5e-5], "big": 2**70}
    members = Members.of(state)
    # orjson refuses 2**70: the stdlib encodes that member, orjson the other one.
    assert members.values == [encode_fast([1.5e-5]), encode_trusted(2**70)]
    assert members.prefixes[0] is not None
    assert members.prefixes[1] is None
