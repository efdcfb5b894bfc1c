"""The knobs of the conversation API, with the defaults of seed 000."""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentckpt.conversation.coalesce import DEFAULT_FLUSH_INTERVAL
from agentckpt.errors import ConfigurationError

__all__ = ["ConversationOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationOptions:
    """How a conversation is written.

    - ``flush_interval``: seconds between writes of a streaming turn's partial state
      (a finished tool call and the end of the turn are written at once regardless).
    - ``blob_threshold``: a tool result whose JSON encoding is larger than this many
      bytes is stored out of the state, zstd-compressed, in the blob store.
    - ``archive_threshold``: once a committed state is larger than this many bytes, the
      next turn moves the oldest completed turns to the history table, keeping the
      newest turns that fit in ``archive_target`` bytes (default: half the threshold)
      and at least ``archive_keep_turns`` turns. The default, 128 KiB, bounds what a
      commit, a snapshot and ``open()`` handle however long the conversation grows,
      and is above what a typical 30-turn conversation holds (tool results over
      ``blob_threshold`` are blobs, not state), which therefore never archives.

    Example::

        ConversationOptions(flush_interval=0.25, blob_threshold=16 * 1024)
    """

    flush_interval: float = DEFAULT_FLUSH_INTERVAL
    blob_threshold: int = 4 * 1024
    archive_threshold: int = 128 * 1024
    archive_target: int | None = None
    archive_keep_turns: int = 2

    def __post_init__(self) -> None:
        flush = self.flush_interval
        if type(flush) not in (int, float) or not math.isfinite(flush):
            raise ConfigurationError(f"flush_interval must be a finite number, got {flush!r}")
        for name in ("blob_threshold", "archive_threshold", "archive_target", "archive_keep_turns"):
            value = getattr(self, name)
            # A byte count or a turn count; True is an int and NaN passes every comparison.
            if type(value) is not int and not (name == "archive_target" and value is None):
                raise ConfigurationError(f"{name} must be an int, got {value!r}")
        if not self.flush_interval >= 0:
            raise ConfigurationError(f"flush_interval must be >= 0, got {self.flush_interval}")
        if self.blob_threshold < 0:
            raise ConfigurationError(f"blob_threshold must be >= 0, got {self.blob_threshold}")
        if self.archive_threshold < 1:
            raise ConfigurationError(
                f"archive_threshold must be >= 1 byte, got {self.archive_threshold}"
            )
        if self.archive_target is not None and self.archive_target < 0:
            raise ConfigurationError(f"archive_target must be >= 0, got {self.archive_target}")
        if self.archive_keep_turns < 1:
            raise ConfigurationError(
                f"archive_keep_turns must be >= 1, got {self.archive_keep_turns}"
            )

    @property
    def target_bytes(self) -> int:
        """The hot-state size archiving aims for."""
        if self.archive_target is not None:
            return self.archive_target
        return self.archive_threshold // 2
