"""Checks of the store's plain arguments: each bad one is an :class:`InvalidValueError`
naming the argument, raised before anything is sent, the same on every backend.

(Values inside states and metadata are checked by the codec, with their JSON path.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from agentckpt._core.codec import MAX_SUPPORTED_BYTES, Limits
from agentckpt._core.writes import BlobRow, HistoryRow
from agentckpt.errors import InvalidValueError

__all__ = [
    "MAX_COMMIT_BYTES",
    "check_commit_size",
    "check_count",
    "check_mapping",
    "check_seconds",
    "check_text",
]

MAX_COMMIT_BYTES = 2 * MAX_SUPPORTED_BYTES
"""The most the blob and history rows of one commit hold, as stored: 512 MiB. PostgreSQL
takes at most 1 GiB in one field and one protocol message, and a commit's blobs go as
one array parameter; past that it drops the connection, and the commit's outcome reads
as unknown, which a retry loop would meet again and again (five 220 MiB blobs in one
commit did). With the step's own payload (at most 256 MiB) a commit stays under 1 GiB."""


def check_text(name: str, value: object, *, optional: bool = False) -> None:
    """A text column: a str (or None when ``optional``) that PostgreSQL and SQLite both
    store as it is, so no U+0000 (PostgreSQL refuses it) and no lone surrogate."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InvalidValueError("", f"{name} must be a str, not {type(value).__name__}")
    if "\x00" in value:
        raise InvalidValueError("", f"{name} {value!r} contains U+0000, which no backend stores")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValueError(
            "", f"{name} {value!r} is not valid UTF-8 (it holds a lone surrogate)"
        ) from None


def check_mapping(name: str, value: object) -> Mapping[str, Any]:
    """A JSON object argument (None for an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidValueError("", f"{name} must be a mapping, not {type(value).__name__}")
    return value


def check_seconds(name: str, value: object) -> float:
    """A duration: a finite number of seconds, zero or more."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        raise InvalidValueError("", f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def check_count(name: str, value: object) -> int:
    """A count: an int, one or more."""
    if type(value) is not int or not 1 <= value <= 2**31 - 1:
        raise InvalidValueError("", f"{name} must be an int from 1, got {value!r}")
    return value


def check_commit_size(
    run_id: UUID, blobs: Sequence[BlobRow], history: Sequence[HistoryRow], limits: Limits
) -> None:
    """Refuse a commit with a blob over ``limits.max_bytes`` (the bound the run loop and
    the conversation API apply to each value they move to a blob) or whose blob and
    history rows add up to more than :data:`MAX_COMMIT_BYTES`."""
    for blob in blobs:
        if blob.size > limits.max_bytes:
            raise InvalidValueError(
                "",
                f"run {run_id}: blob {blob.digest} is {blob.size} bytes, over the "
                f"limit of {limits.max_bytes} bytes for one value (Limits.max_bytes)",
            )
    total = sum(len(b.data) for b in blobs) + sum(len(h.payload) for h in history)
    if total > MAX_COMMIT_BYTES:
        raise InvalidValueError(
            "",
            f"run {run_id}: this commit's {len(blobs)} blob(s) and {len(history)} history "
            f"row(s) hold {total} bytes, over the {MAX_COMMIT_BYTES} bytes one commit can "
            "carry; nothing was written: commit the large values over several steps",
        )
