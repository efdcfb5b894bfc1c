"""What the command line prints: tables, JSON, sizes, ages and progress bars.

Human output goes to stdout as aligned tables; ``--json`` prints the same data as JSON
for scripts. Every timestamp, in a table or in JSON, is ISO 8601 in UTC with a ``Z``
(:func:`format_time`). Progress bars go to stderr and only when stderr is a terminal, so piping
``agentckpt export > runs.jsonl`` stays clean.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TextIO
from uuid import UUID

from agentckpt._core.timestamps import iso_utc

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# 100 years: an age past it reaches before any stored timestamp (PostgreSQL refuses the
# date it would compute; SQLite would compare it as text and match nothing).
_MAX_SECONDS = 36_500 * 86400


def parse_duration(text: str) -> float:
    """Seconds in ``30s``, ``15m``, ``1h``, ``7d`` or ``2w`` (at most 100 years);
    ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"invalid duration {text!r}: use e.g. 30s, 15m, 1h, 7d or 2w")
    seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
    if seconds > _MAX_SECONDS:
        raise ValueError(f"duration {text!r} is longer than 100 years (36500d)")
    return seconds


def format_time(value: datetime, *, precise: bool = False) -> str:
    """``2026-12-01T13:57:23Z``: ISO 8601 in UTC (``precise``: with microseconds)."""
    return iso_utc(value, precise=precise)


def to_jsonable(value: Any) -> Any:
    """Records and their fields as plain JSON values (UUIDs and times as strings; times
    as :func:`format_time` with microseconds)."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return format_time(value, precise=True)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def print_json(value: Any, out: TextIO | None = None) -> None:
    """Print ``value`` as indented JSON (exact for big integers, unlike float-based tools)."""
    stream = out or sys.stdout
    stream.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return format_time(value)
    return str(value)


_SIZE = re.compile(r"^-?\d+(\.\d+)? [KMGT]?B$")


def _numeric(value: Any) -> bool:
    """Numbers and sizes such as ``1.2 KB`` line up on the right."""
    if isinstance(value, str):
        return bool(_SIZE.match(value))
    return isinstance(value, int | float) and not isinstance(value, bool)


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], *, max_width: int = 60
) -> str:
    """Rows as an aligned text table; numbers right-aligned, long cells cut with ``…``."""
    body = [list(row) for row in rows]
    cells = [[_cell(v) for v in row] for row in body]
    cells = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in cells]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    right = [
        bool(body) and all(_numeric(row[i]) or row[i] in (None, "-") for row in body)
        for i in range(len(headers))
    ]

    def line(texts: Sequence[str]) -> str:
        parts = [
            t.rjust(widths[i]) if right[i] else t.ljust(widths[i]) for i, t in enumerate(texts)
        ]
        return "  ".join(parts).rstrip()

    lines = [line(headers), line(["-" * w for w in widths])]
    lines.extend(line(row) for row in cells)
    return "\n".join(lines)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print :func:`format_table` to stdout; an empty listing says so instead."""
    materialized = list(rows)
    if not materialized:
        print("(none)")
        return
    print(format_table(headers, materialized))


def print_fields(pairs: Iterable[tuple[str, Any]]) -> None:
    """Print ``name: value`` lines with the names aligned."""
    items = [(name, _cell(value)) for name, value in pairs]
    width = max((len(name) for name, _ in items), default=0)
    for name, value in items:
        print(f"{name + ':':<{width + 1}} {value}")


class Progress:
    """A progress bar on stderr while long work runs; silent when stderr is not a terminal.

    Example::

        with Progress("export", total=len(runs)) as bar:
            for run in runs:
                ...
                bar.advance()
    """

    def __init__(self, label: str, total: int | None, *, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._shown = -1

    def __enter__(self) -> Progress:
        self._draw()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def advance(self, count: int = 1, *, note: str = "") -> None:
        """Count ``count`` more units of work done."""
        self.done += count
        self._draw(note)

    def _draw(self, note: str = "") -> None:
        if not self.enabled:
            return
        width = max(10, min(40, shutil.get_terminal_size((80, 24)).columns - 50))
        if self.total:
            fraction = min(1.0, self.done / self.total)
            # Redraw only when the bar visibly moves: cheap on a slow terminal.
            cells = int(fraction * width)
            key = cells * 1000 + self.done if note else cells
            if key == self._shown and self.done != self.total:
                return
            self._shown = key
            bar = "#" * cells + "." * (width - cells)
            text = f"\r{self.label} [{bar}] {self.done}/{self.total} {note}"
        else:
            text = f"\r{self.label}: {self.done} {note}"
        self.stream.write(text[: shutil.get_terminal_size((80, 24)).columns].ljust(20))
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
