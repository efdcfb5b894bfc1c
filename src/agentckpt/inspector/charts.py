"""Inline SVG charts of a run's storage, drawn on the server (no script, no library).

The SVG is built here from numbers, every text in it escaped, so the run page includes
it as markup (``|safe``): the only markup a page takes from code rather than a template.

Readable at any scale: the byte axis has round ticks (1, 2 or 5 times a power of ten,
never below one byte) labelled in one unit with as many decimals as the ticks need (so
``0``, ``2 B``, ``4 B`` and ``0``, ``0.25 MB``, ``0.50 MB``, never ``2 B``, ``8 B`` for
2.5 and 7.5); a run of one step shows its point; past :data:`MAX_BARS` steps the bars
group consecutive steps (each bar the largest of its group, said in its caption and
tooltip) and the lines keep at most :data:`MAX_POINTS` points.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 16, 36
COLORS = {"snapshot": "#1f4e79", "delta": "#7fb3e0", "state": "#d9822b", "cumulative": "#2e7d32"}
MAX_BARS = 200
MAX_POINTS = 400
_UNITS = (("B", 1), ("KB", 10**3), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12))


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass(frozen=True, slots=True)
class StepSize:
    """One kept step's sizes: what it stores, and how big its whole state is."""

    step: int
    kind: str
    stored_bytes: int
    state_bytes: int


@dataclass(frozen=True, slots=True)
class Axis:
    """A byte axis: its ticks (bytes, from 0 to the top) and their labels."""

    ticks: tuple[int, ...]
    labels: tuple[str, ...]

    @property
    def top(self) -> int:
        """The axis maximum, in bytes."""
        return self.ticks[-1]


def byte_axis(largest: int, *, count: int = 4) -> Axis:
    """Round ticks from 0 to at least ``largest`` bytes, about ``count`` intervals."""
    largest = max(1, largest)
    raw = largest / count
    power = 1
    while power * 10 <= raw:
        power *= 10
    step = next((f * power for f in (1, 2, 5, 10) if f * power >= raw), 10 * power)
    step = max(1, step)
    n = -(-largest // step)  # ceiling
    ticks = tuple(step * i for i in range(n + 1))
    name, size = next(((u, s) for u, s in reversed(_UNITS) if ticks[-1] >= s), _UNITS[0])
    decimals = next(d for d in range(0, 7) if (step * 10**d) % size == 0 or d == 6)
    labels = tuple("0" if t == 0 else f"{t / size:.{decimals}f} {name}" for t in ticks)
    return Axis(ticks, labels)


def _frame(axis: Axis) -> list[str]:
    """Horizontal grid lines with byte labels."""
    inner_h = HEIGHT - TOP - BOTTOM
    parts = []
    for tick, label in zip(axis.ticks, axis.labels, strict=True):
        y = TOP + inner_h - inner_h * tick / axis.top
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#d9dee3" stroke-width="1"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" '
            f'text-anchor="end" fill="#5f6b76">{_esc(label)}</text>'
        )
    return parts


def _x_labels(steps: Sequence[int], xs: Sequence[float]) -> list[str]:
    """Step numbers under the x axis: at most about eight, first and last included."""
    n = len(steps)
    wanted = sorted({0, n - 1} | {round(i * (n - 1) / 7) for i in range(8)}) if n > 1 else [0]
    base = HEIGHT - BOTTOM + 16
    parts = [
        f'<text x="{xs[i]:.1f}" y="{base}" font-size="11" text-anchor="middle" '
        f'fill="#5f6b76">{steps[i]}</text>'
        for i in wanted
    ]
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 4}" font-size="11" '
        f'text-anchor="middle" fill="#5f6b76">kept step</text>'
    )
    return parts


@dataclass(frozen=True, slots=True)
class _Bar:
    first: int
    last: int
    kind: str
    value: int
    total: int


def group_size(steps: int) -> int:
    """How many consecutive steps one bar stands for: 1 up to MAX_BARS steps."""
    return max(1, -(-steps // MAX_BARS))


def _bars(sizes: Sequence[StepSize]) -> tuple[list[_Bar], int]:
    """One bar per step, or per group of consecutive steps past MAX_BARS."""
    group = group_size(len(sizes))
    bars = []
    for i in range(0, len(sizes), group):
        chunk = sizes[i : i + group]
        kind = "snapshot" if any(s.kind == "snapshot" for s in chunk) else chunk[0].kind
        values = [s.stored_bytes for s in chunk]
        bars.append(_Bar(chunk[0].step, chunk[-1].step, kind, max(values), sum(values)))
    return bars, group


def stored_bytes_chart(sizes: Sequence[StepSize]) -> str:
    """Bars: the bytes each kept step stores (snapshots dark, deltas light)."""
    if not sizes:
        return '<p class="note">No kept steps yet.</p>'
    bars, group = _bars(sizes)
    axis = byte_axis(max(b.value for b in bars))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(bars)
    width = min(48.0, max(1.0, slot * 0.8))
    parts = _frame(axis)
    xs = []
    for i, b in enumerate(bars):
        h = inner_h * b.value / axis.top
        x = LEFT + slot * i + (slot - width) / 2
        xs.append(x + width / 2)
        span = f"step {b.first}" if b.first == b.last else f"steps {b.first} to {b.last}"
        what = (
            f"{b.value} bytes stored"
            if group == 1
            else f"largest {b.value} bytes, {b.total} bytes in all"
        )
        parts.append(
            f'<rect class="bar {_esc(b.kind)}" x="{x:.1f}" y="{TOP + inner_h - h:.1f}" '
            f'width="{width:.1f}" height="{max(h, 0.5):.1f}" '
            f'fill="{COLORS.get(b.kind, "#888")}">'
            f"<title>{_esc(span)} ({_esc(b.kind)}): {_esc(what)}</title></rect>"
        )
    parts += _x_labels([b.first for b in bars], xs)
    label = "Bytes stored per kept step"
    if group > 1:
        label += f" (each bar: the largest of {group} consecutive steps)"
    return _svg(label, parts)


def growth_chart(sizes: Sequence[StepSize]) -> str:
    """Lines: the bytes kept so far (cumulative) against the size of the whole state."""
    if not sizes:
        return ""
    cumulative = []
    total = 0
    for s in sizes:
        total += s.stored_bytes
        cumulative.append(total)
    every = max(1, -(-len(sizes) // MAX_POINTS))
    picked = sorted(set(range(0, len(sizes), every)) | {len(sizes) - 1})
    axis = byte_axis(max(max(cumulative), max(s.state_bytes for s in sizes)))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = max(1, len(sizes) - 1)
    xs = [LEFT + inner_w * i / span if len(sizes) > 1 else LEFT + inner_w / 2 for i in picked]
    steps = [sizes[i].step for i in picked]

    def line(values: Sequence[int], color: str, name: str) -> str:
        coords = [
            (x, TOP + inner_h - inner_h * values[i] / axis.top)
            for x, i in zip(xs, picked, strict=True)
        ]
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        dots = ""
        if len(coords) <= 60:
            dots = "".join(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>'
                for x, y in coords
            )
        return (
            f'<polyline class="line {_esc(name)}" points="{points}" fill="none" '
            f'stroke="{color}" stroke-width="2"><title>{_esc(name)}</title></polyline>{dots}'
        )

    parts = _frame(axis)
    parts.append(line(cumulative, COLORS["cumulative"], "kept bytes, cumulative"))
    parts.append(line([s.state_bytes for s in sizes], COLORS["state"], "whole state size"))
    parts += _x_labels(steps, xs)
    return _svg("Storage growth", parts)


def _svg(label: str, parts: list[str]) -> str:
    return (
        f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{_esc(label)}"><title>{_esc(label)}</title>{"".join(parts)}</svg>'
    )
