"""A conversation's archived messages stitched back from its history segments; no I/O.

A segment is one ``history`` row: a JSON list of messages, zstd-compressed when that
pays, written once and never rewritten. The conversation format (``conversation.
archive``) writes them; the conversation reader and the transcript export read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from agentckpt._core.codec import decode
from agentckpt._core.compression import unpack
from agentckpt.errors import CorruptDataError

__all__ = ["stitch"]


def stitch(
    conversation_id: UUID, segments: int, messages: int, rows: Sequence[dict[str, Any]]
) -> list[Any]:
    """The archived messages (JSON) from the ``history`` rows of a conversation, in order.

    Only segments ``0 .. segments-1`` count; they must all be there and hold exactly
    ``messages`` messages, else :class:`CorruptDataError`.
    """
    if segments == 0:
        return []
    wanted = sorted((r for r in rows if r["seq"] < segments), key=lambda r: r["seq"])
    seqs = [r["seq"] for r in wanted]
    if seqs != list(range(segments)):
        raise CorruptDataError(
            f"conversation {conversation_id}: history segments {seqs} found, "
            f"0..{segments - 1} expected"
        )
    out: list[Any] = []
    for row in wanted:
        where = f"conversation {conversation_id} history segment {row['seq']}"
        raw = unpack(row["codec"], bytes(row["payload"]), where=where)
        if len(raw) != row["raw_bytes"]:
            raise CorruptDataError(f"{where}: {len(raw)} bytes, {row['raw_bytes']} recorded")
        try:
            items = decode(raw)
        except CorruptDataError as exc:
            raise CorruptDataError(f"{where}: {exc}") from exc
        if type(items) is not list or len(items) != row["item_count"]:
            raise CorruptDataError(f"{where}: does not hold {row['item_count']} messages")
        out.extend(items)
    if len(out) != messages:
        raise CorruptDataError(
            f"conversation {conversation_id}: history holds {len(out)} messages, "
            f"the state says {messages}"
        )
    return out
