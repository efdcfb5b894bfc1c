"""Inline SVG charts of a run's storage, drawn on the server (no script, no library)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentckpt.inspector.markup import esc
from agentckpt.ops.units import human_bytes

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 36
COLORS = {"snapshot": "#1f4e79", "delta": "#7fb3e0", "state": "#d9822b", "cumulative": "#2e7d32"}


@dataclass(frozen=True, slots=True)
class StepSize:
    """One kept step's sizes: what it stores, and how big its whole state is."""

    step: int
    kind: str
    stored_bytes: int
    state_bytes: int


def _nice_max(value: int) -> int:
    """A round axis maximum at or above ``value``: 1, 2 or 5 times a power of ten."""
    if value <= 0:
        return 1
    power = 1
    while power * 10 <= value:
        power *= 10
    for factor in (1, 2, 5, 10):
        if factor * power >= value:
            return factor * power
    return 10 * power


def _frame(top: int, ticks: int = 4) -> list[str]:
    """Horizontal grid lines with byte labels, and the axes."""
    inner_h = HEIGHT - TOP - BOTTOM
    parts = []
    for i in range(ticks + 1):
        y = TOP + inner_h - inner_h * i / ticks
        label = human_bytes(round(top * i / ticks))
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#d9dee3" stroke-width="1"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#5f6b76">{esc(label)}</text>'
        )
    return parts


def _x_labels(steps: Sequence[int], xs: Sequence[float]) -> list[str]:
    """Step numbers under the x axis, at most about ten of them."""
    every = max(1, len(steps) // 10)
    base = HEIGHT - BOTTOM + 16
    parts = [
        f'<text x="{x:.1f}" y="{base}" font-size="11" text-anchor="middle" '
        f'fill="#5f6b76">{step}</text>'
        for i, (step, x) in enumerate(zip(steps, xs, strict=True))
        if i % every == 0 or i == len(steps) - 1
    ]
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 4}" font-size="11" '
        f'text-anchor="middle" fill="#5f6b76">kept step</text>'
    )
    return parts


def stored_bytes_chart(sizes: Sequence[StepSize]) -> str:
    """Bars: the bytes each kept step stores (snapshots dark, deltas light)."""
    if not sizes:
        return '<p class="note">No kept steps yet.</p>'
    top = _nice_max(max(s.stored_bytes for s in sizes))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(sizes)
    bar = max(1.0, slot * 0.8)
    parts = _frame(top)
    xs = []
    for i, s in enumerate(sizes):
        h = inner_h * s.stored_bytes / top
        x = LEFT + slot * i + (slot - bar) / 2
        xs.append(x + bar / 2)
        parts.append(
            f'<rect class="bar {esc(s.kind)}" x="{x:.1f}" y="{TOP + inner_h - h:.1f}" '
            f'width="{bar:.1f}" height="{max(h, 0.5):.1f}" fill="{COLORS.get(s.kind, "#888")}">'
            f"<title>step {s.step} ({esc(s.kind)}): {s.stored_bytes} bytes stored</title></rect>"
        )
    parts += _x_labels([s.step for s in sizes], xs)
    return _svg("Bytes stored per kept step", parts)


def growth_chart(sizes: Sequence[StepSize]) -> str:
    """Lines: the bytes kept so far (cumulative) against the size of the whole state."""
    if not sizes:
        return ""
    cumulative = []
    total = 0
    for s in sizes:
        total += s.stored_bytes
        cumulative.append(total)
    top = _nice_max(max(max(cumulative), max(s.state_bytes for s in sizes)))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step_x = inner_w / max(1, len(sizes) - 1)
    xs = [LEFT + step_x * i if len(sizes) > 1 else LEFT + inner_w / 2 for i in range(len(sizes))]

    def line(values: Sequence[int], color: str, name: str) -> str:
        points = " ".join(
            f"{x:.1f},{TOP + inner_h - inner_h * v / top:.1f}"
            for x, v in zip(xs, values, strict=True)
        )
        return (
            f'<polyline class="line {name}" points="{points}" fill="none" stroke="{color}" '
            f'stroke-width="2"><title>{esc(name)}</title></polyline>'
        )

    parts = _frame(top)
    parts.append(line(cumulative, COLORS["cumulative"], "kept bytes, cumulative"))
    parts.append(line([s.state_bytes for s in sizes], COLORS["state"], "whole state size"))
    parts += _x_labels([s.step for s in sizes], xs)
    return _svg("Storage growth", parts)


def _svg(label: str, parts: list[str]) -> str:
    return (
        f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{esc(label)}"><title>{esc(label)}</title>{"".join(parts)}</svg>'
    )
