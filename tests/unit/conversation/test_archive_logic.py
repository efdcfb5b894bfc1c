"""Choosing which turns to archive, and stitching history segments back, without I/O."""

from __future__ import annotations

import uuid

import pytest

from agentckpt import CorruptDataError
from agentckpt.conversation import ArchiveInfo
from agentckpt.conversation.archive import choose_cut, segment_row, stitch_segments

ROLES = ["system", "user", "assistant", "user", "assistant", "user", "assistant"]


def test_cuts_fall_before_a_user_message_and_keep_enough_turns() -> None:
    sizes = [10] * len(ROLES)
    assert choose_cut(ROLES, sizes, target_bytes=70, keep_turns=1) == 0  # fits already
    assert choose_cut(ROLES, sizes, target_bytes=69, keep_turns=1) == 1
    assert choose_cut(ROLES, sizes, target_bytes=40, keep_turns=1) == 3
    assert choose_cut(ROLES, sizes, target_bytes=20, keep_turns=1) == 5
    assert choose_cut(ROLES, sizes, target_bytes=0, keep_turns=1) == 5  # as much as allowed
    assert choose_cut(ROLES, sizes, target_bytes=0, keep_turns=2) == 3
    assert choose_cut(ROLES, sizes, target_bytes=0, keep_turns=3) == 1
    assert choose_cut(ROLES, sizes, target_bytes=0, keep_turns=4) == 0


def test_nothing_to_cut_when_the_first_message_starts_the_only_turns() -> None:
    assert choose_cut(["user", "assistant"], [5, 5], target_bytes=0, keep_turns=1) == 0


def rows_for(*segments: list[dict[str, str]]) -> list[dict[str, object]]:
    out = []
    for seq, messages in enumerate(segments):
        row = segment_row(seq, messages)
        out.append(
            {
                "seq": row.seq,
                "step": seq + 3,
                "item_count": row.item_count,
                "codec": row.codec,
                "payload": row.payload,
                "raw_bytes": row.raw_bytes,
            }
        )
    return out


def test_segments_stitch_back_in_order() -> None:
    first = [{"role": "user", "content": "a" * 400}, {"role": "assistant", "content": "b"}]
    second = [{"role": "user", "content": "c"}]
    rows = rows_for(first, second)
    assert rows[0]["codec"] == "json+zstd"  # compressed when it pays
    cid = uuid.uuid4()
    assert stitch_segments(cid, ArchiveInfo(3, 2), list(reversed(rows))) == first + second
    # A reader of an older state sees only the segments it counts.
    assert stitch_segments(cid, ArchiveInfo(2, 1), rows) == first
    assert stitch_segments(cid, None, rows) == []


def test_a_missing_segment_or_wrong_count_is_corruption() -> None:
    rows = rows_for([{"role": "user"}], [{"role": "user"}])
    cid = uuid.uuid4()
    with pytest.raises(CorruptDataError, match="segments"):
        stitch_segments(cid, ArchiveInfo(2, 2), rows[1:])
    with pytest.raises(CorruptDataError, match="3"):
        stitch_segments(cid, ArchiveInfo(3, 2), rows)
    damaged = dict(rows[0], payload=b"[1,2")
    with pytest.raises(CorruptDataError, match="segment 0"):
        stitch_segments(cid, ArchiveInfo(2, 2), [damaged, rows[1]])
