"""Archiving old turns to the history table, and stitching them back; no I/O here.

A long conversation's state would grow without bound, and a commit's snapshot and a
resume cost what the state holds. Once a committed state passes ``archive_threshold``
bytes, the next turn moves its oldest completed turns into one ``history`` row (a
*segment*: a JSON list of messages, zstd-compressed when that pays, written once and
never rewritten), in the same transaction as the step that drops them from the state.
The state's ``archive`` object counts the archived messages and segments, so a reader
knows exactly which history rows precede the hot messages: segments
``0 .. segments-1``, holding ``messages`` messages in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from agentckpt._core.codec import encode_trusted
from agentckpt._core.compression import pack
from agentckpt._core.segments import stitch
from agentckpt._core.writes import HistoryRow
from agentckpt.conversation.model import ArchiveInfo

__all__ = ["choose_cut", "segment_row", "stitch_segments"]


def choose_cut(
    roles: Sequence[str], sizes: Sequence[int], *, target_bytes: int, keep_turns: int
) -> int:
    """How many leading messages to archive (0: none).

    Cuts only before a user message (a turn boundary), keeps at least ``keep_turns``
    turns, and archives as little as brings the rest to ``target_bytes`` or less (as
    much as allowed when nothing does).
    """
    starts = [i for i, role in enumerate(roles) if role == "user"]
    # Cutting before starts[i] keeps len(starts) - i turns.
    allowed = [i for i in starts[: max(0, len(starts) - keep_turns + 1)] if i > 0]
    remaining = sum(sizes)
    if not allowed or remaining <= target_bytes:
        return 0
    position = 0
    for cut in allowed:
        remaining -= sum(sizes[position:cut])
        position = cut
        if remaining <= target_bytes:
            return cut
    return allowed[-1]


def segment_row(seq: int, messages: list[dict[str, Any]]) -> HistoryRow:
    """The history row holding ``messages`` (as stored in the state) as segment ``seq``."""
    raw = encode_trusted(messages)
    codec, payload = pack(raw)
    return HistoryRow(
        seq=seq, item_count=len(messages), codec=codec, payload=payload, raw_bytes=len(raw)
    )


def stitch_segments(
    conversation_id: UUID, archive: ArchiveInfo | None, rows: Sequence[dict[str, Any]]
) -> list[Any]:
    """The archived messages (JSON) from the ``history`` rows of a conversation, in order
    (:func:`agentckpt._core.segments.stitch` with ``archive``'s counts; none without)."""
    if archive is None:
        return []
    return stitch(conversation_id, archive.segments, archive.messages, rows)
