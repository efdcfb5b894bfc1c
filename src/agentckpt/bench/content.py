"""The storage floor: how small the content written can be, zstd-compressed.

The conversation workload's content is its final states: every message, tool call and
result, the config, tools and metadata of each conversation, which is everything any
subject must keep. Each final state is encoded as JSON (``orjson``) and compressed on
its own with zstd at level 3 (the library's default); the sum is the floor a store's
bytes are compared with. Nothing a store keeps beyond this (indexes, row headers, older
versions, free space) is content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import zstandard

from agentckpt.bench.workload import ConversationSpec, apply_turn, apply_user, initial_state

__all__ = ["ZSTD_LEVEL", "ContentSize", "content_size", "final_state"]

ZSTD_LEVEL = 3


@dataclass(frozen=True, slots=True)
class ContentSize:
    """The content written: its JSON bytes and its zstd-compressed bytes."""

    states: int
    json_bytes: int
    zstd_bytes: int

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "states": self.states,
            "json_bytes": self.json_bytes,
            "zstd_bytes": self.zstd_bytes,
            "zstd_level": ZSTD_LEVEL,
        }


def final_state(spec: ConversationSpec) -> dict[str, Any]:
    """The conversation's state after its last turn."""
    state = initial_state(spec)
    for turn in spec.turns:
        apply_user(state, turn)
        apply_turn(state, turn)
    return state


def content_size(specs: list[ConversationSpec]) -> ContentSize:
    """The floor of ``specs``: each final state's JSON, compressed on its own."""
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    raw = packed = 0
    for spec in specs:
        encoded = orjson.dumps(final_state(spec))
        raw += len(encoded)
        packed += len(compressor.compress(encoded))
    return ContentSize(states=len(specs), json_bytes=raw, zstd_bytes=packed)
