"""Redaction of LangGraph checkpoints and pending writes before they are stored.

Channel values hold JSON values and LangChain messages: a message's ``content`` (a tool
message's content is the tool's result) and its tool calls' arguments are redacted, as
is every string of a JSON value; other objects are stored as the serializer makes them.
What was removed is recorded in the checkpoint's own metadata under ``"redactions"``
(paths and kinds), so ``graph.get_state(config).metadata`` shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentckpt.redaction import Redaction, Redactor, redact

__all__ = ["METADATA_KEY", "redact_channels", "redact_writes"]

METADATA_KEY = "redactions"
_MESSAGE_FIELDS = ("content", "tool_calls", "invalid_tool_calls")


def _redact_value(
    value: Any, redactors: Sequence[Redactor], path: str
) -> tuple[Any, list[Redaction]]:
    if isinstance(value, list | tuple):
        found: list[Redaction] = []
        items = []
        for i, item in enumerate(value):
            clean, more = _redact_value(item, redactors, f"{path}/{i}")
            items.append(clean)
            found.extend(more)
        if not found:
            return value, []
        return (tuple(items) if isinstance(value, tuple) else items), found
    copy = getattr(value, "model_copy", None)
    if callable(copy) and hasattr(value, "content"):
        update: dict[str, Any] = {}
        found = []
        for name in _MESSAGE_FIELDS:
            if getattr(value, name, None) is None:
                continue
            clean, more = redact(getattr(value, name), redactors, path=f"{path}/{name}")
            if more:
                update[name] = clean
                found.extend(more)
        return (copy(update=update) if update else value), found
    return redact(value, redactors, path=path)


def redact_channels(
    checkpoint: dict[str, Any], redactors: Sequence[Redactor]
) -> tuple[dict[str, Any], list[Redaction]]:
    """The checkpoint with its channel values redacted, and what was removed."""
    if not redactors:
        return checkpoint, []
    values = checkpoint.get("channel_values") or {}
    found: list[Redaction] = []
    clean: dict[str, Any] = {}
    for channel, value in values.items():
        clean[channel], more = _redact_value(value, redactors, f"/channel_values/{channel}")
        found.extend(more)
    if not found:
        return checkpoint, []
    return {**checkpoint, "channel_values": clean}, found


def redact_writes(
    writes: Sequence[tuple[str, Any]], redactors: Sequence[Redactor]
) -> list[tuple[str, Any]]:
    """Pending writes ``(channel, value)`` with their values redacted."""
    return [
        (channel, _redact_value(value, redactors, f"/writes/{channel}")[0])
        for channel, value in writes
    ]
