"""What the conversation API refuses before anything changes; no I/O.

The reader (:meth:`Message.from_json` and :meth:`ToolCall.from_json`) refuses a stored
message whose role or timestamp is not a string, or a tool call whose name is not a
string or whose duration is not a number. A value the writer let through that the reader
refuses would make the conversation impossible to open again, so every field the reader
checks is checked here first, at the API call, with the path it would have in the state.
The counters have stricter rules than the reader's (no negative counts or costs, no
fractional tokens): a total that goes down or a token count of 1.5 is a bug in the
caller, not a fact to keep.
"""

from __future__ import annotations

import math
from typing import Any

from agentckpt.conversation.fields import at
from agentckpt.conversation.model import Message, ToolCall
from agentckpt.errors import InvalidValueError

__all__ = ["check_call", "check_duration", "check_message", "check_usage"]


def _count(value: Any, path: str, name: str) -> None:
    if type(value) is not int or value < 0:
        raise InvalidValueError(path, f"{name} must be an integer >= 0, not {value!r}")


def _bad_amount(value: Any) -> bool:
    return type(value) not in (int, float) or not math.isfinite(value) or value < 0


def _amount(value: Any, path: str, name: str, unit: str) -> None:
    if _bad_amount(value):
        raise InvalidValueError(path, f"{name} must be a number of {unit} >= 0, not {value!r}")


def check_usage(input_tokens: Any, output_tokens: Any, cost_usd: Any) -> None:
    """Refuse token counts that are not integers >= 0 and a cost that is not a finite
    number >= 0 (bools are neither), at the metadata field each one is added to."""
    _count(input_tokens, "/metadata/input_tokens", "input_tokens")
    _count(output_tokens, "/metadata/output_tokens", "output_tokens")
    _amount(cost_usd, "/metadata/cost_estimate_usd", "cost_usd", "US dollars")


def check_duration(duration_ms: Any, path: str) -> None:
    """Refuse a tool call duration that is not None or a finite number >= 0."""
    # The path is built only for the error: these checks run on every message written.
    if duration_ms is not None and _bad_amount(duration_ms):
        _amount(duration_ms, at(path, "duration_ms"), "duration_ms", "milliseconds")


def _good_call(call: Any) -> bool:
    """True for a tool call :func:`check_call` lets pass (tested without a path)."""
    return (
        isinstance(call, ToolCall)
        and type(call.tool_name) is str
        and bool(call.tool_name)
        and (call.duration_ms is None or not _bad_amount(call.duration_ms))
    )


def check_call(call: Any, path: str) -> None:
    """Refuse a tool call the reader would not read back: not a :class:`ToolCall`, a
    name that is not a non-empty string, a bad duration."""
    if _good_call(call):
        return
    if not isinstance(call, ToolCall):
        raise InvalidValueError(path, f"a tool call must be a ToolCall, not {type(call).__name__}")
    name = call.tool_name
    if type(name) is not str or not name:
        raise InvalidValueError(
            at(path, "tool_name"), f"a tool call needs a non-empty string name, not {name!r}"
        )
    check_duration(call.duration_ms, path)


def check_message(message: Any, path: str) -> None:
    """Refuse a message the reader would not read back: not a :class:`Message`, a role
    that is not a non-empty string, a timestamp that is not a string, tool calls that are
    not a list of good calls."""
    if not isinstance(message, Message):
        raise InvalidValueError(path, f"a message must be a Message, not {type(message).__name__}")
    role = message.role
    if type(role) is not str or not role:
        raise InvalidValueError(
            at(path, "role"), f"a message needs a non-empty string role, not {role!r}"
        )
    if message.timestamp is not None and type(message.timestamp) is not str:
        raise InvalidValueError(
            at(path, "timestamp"),
            f"a timestamp must be a string, not {type(message.timestamp).__name__}",
        )
    calls = message.tool_calls
    if calls is None:
        return
    if type(calls) is not list:
        raise InvalidValueError(
            at(path, "tool_calls"), f"must be a list of tool calls, not {type(calls).__name__}"
        )
    for i, call in enumerate(calls):
        # The path is built only for a call check_call refuses.
        if not _good_call(call):
            check_call(call, at(at(path, "tool_calls"), i))
