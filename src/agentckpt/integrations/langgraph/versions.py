"""Channel versions in both formats a LangGraph thread may carry; pure, no LangGraph import.

agentckpt numbers a channel's versions ``1, 2, 3, ...`` (LangGraph's default). LangGraph's
own savers (``InMemorySaver``, ``PostgresSaver``, ``SqliteSaver``) write strings: the
integer part zero-padded to 32 digits, a dot, and a random fraction, such as
``"00000000000000000000000000000005.0.7912803477427346"``; a string version compares as
text, which orders it by its integer part. A thread continues in the format it has, so a
thread started by one of those savers keeps string versions here.
"""

from __future__ import annotations

import random

from agentckpt.errors import InvalidValueError

__all__ = ["Version", "next_version"]

Version = int | float | str
"""A channel version: an int (agentckpt's own), a float, or LangGraph's string form."""

# LangGraph's savers pad the integer part to this many digits, so versions compare as text.
_DIGITS = 32


def next_version(current: Version | None) -> Version:
    """The version after ``current``, in ``current``'s format (``1`` for a new channel)."""
    if current is None:
        return 1
    if isinstance(current, bool):
        raise InvalidValueError("", f"channel version {current!r} is a bool, not a version")
    if isinstance(current, int | float):
        return current + 1
    if isinstance(current, str):
        head = current.split(".", 1)[0]
        if not head.isascii() or not head.isdigit():
            raise InvalidValueError(
                "",
                f"channel version {current!r} is neither an int nor LangGraph's string form "
                "(digits, then '.' and a fraction)",
            )
        # As LangGraph's savers do: the random fraction keeps two forks of one checkpoint
        # from writing the same version of a channel with different values.
        return f"{int(head) + 1:0{_DIGITS}}.{random.random():016}"
    raise InvalidValueError(
        "", f"channel version {current!r} is a {type(current).__name__}, not an int or a str"
    )
