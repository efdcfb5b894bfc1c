"""The curves as Markdown tables (what ``--curves`` prints; the plots draw the same)."""

from __future__ import annotations

from agentckpt.bench.curves.model import FULL_READ, FULL_READ_LABEL, WINDOW, Curves, window_mean

__all__ = ["render_curves"]

_TURN_MARKS = (10, 100, 250, 500, 750, 1000)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _mib(value: int) -> str:
    return f"{value / 2**20:.2f}"


def _commit_cost(curves: Curves) -> list[str]:
    marks = [t for t in _TURN_MARKS if t <= curves.turns] or [1]
    out = [
        f"#### Client CPU / wall ms per commit against turn number (mean of {WINDOW} turns "
        f"from each mark; one chat of {curves.turns} turns, about 1 KB a turn)",
        "",
        "| subject | " + " | ".join(f"turn {t}" for t in marks) + " | turn 500 / turn 10 (CPU) |",
        "|---|" + "---|" * (len(marks) + 1),
    ]
    for curve in curves.commit_cost:
        cells = [
            f"{_ms(window_mean(curve.cpu_ms, t))} / {_ms(window_mean(curve.wall_ms, t))}"
            for t in marks
        ]
        early, late = window_mean(curve.cpu_ms, 10), window_mean(curve.cpu_ms, 500)
        growth = (
            f"{late / early:.2f}x" if late is not None and early and curves.turns >= 540 else "-"
        )
        out.append(f"| {curve.label} | " + " | ".join(cells) + f" | {growth} |")
    return out


def _bytes(curves: Curves) -> list[str]:
    out: list[str] = []
    for title, series in (
        ("#### Bytes stored (MiB) against turns (the chat above)", curves.bytes_by_turn),
        (
            f"#### Bytes stored (MiB) against steps ({curves.steps}-step, 30-key run)",
            curves.bytes_by_step,
        ),
    ):
        if not series or not series[0].points:
            continue
        marks = [x for x, _ in series[0].points]
        out += [
            "",
            title,
            "",
            "| subject | " + " | ".join(str(m) for m in marks) + " |",
            "|---|" + "---|" * len(marks),
        ]
        for curve in series:
            values = dict(curve.points)
            out.append(
                f"| {curve.label} | "
                + " | ".join(_mib(values[m]) if m in values else "-" for m in marks)
                + " |"
            )
    return out


def _throughput(curves: Curves) -> list[str]:
    if not curves.throughput:
        return []
    agents = [a for a, _, _ in curves.throughput[0].points]
    out = [
        "",
        "#### Saturated writes/s against concurrent agents (chats)",
        "",
        "| subject | " + " | ".join(f"{a} agents" for a in agents) + " |",
        "|---|" + "---|" * len(agents),
    ]
    for curve in curves.throughput:
        values = {a: w for a, w, _ in curve.points}
        out.append(
            f"| {curve.label} | "
            + " | ".join(f"{values[a]:.0f}" if a in values else "-" for a in agents)
            + " |"
        )
    return out


def _resume(curves: Curves, labels: dict[str, str]) -> list[str]:
    if not curves.resume:
        return []
    out = [
        "",
        "#### Resume P50 / P99 (ms) of the chat, short and long",
        "",
        "agentckpt's resume is `open()`: ready to write the next turn, the hot state read "
        "in one query (archived turns unread); the full read `recover()` reads every "
        "archived message too.",
        "",
        "| subject | turns | P50 | P99 | turns | P50 | P99 | long P99 / short P99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = labels | {c.subject: c.label for c in curves.commit_cost}
    names[FULL_READ] = FULL_READ_LABEL
    for r in curves.resume:
        ratio = f"{r.long_p99 / r.short_p99:.2f}x" if r.short_p99 else "-"
        out.append(
            f"| {names.get(r.subject, r.subject)} | {r.short_turns} | {r.short_p50:.2f} | "
            f"{r.short_p99:.2f} | {r.long_turns} | {r.long_p50:.2f} | {r.long_p99:.2f} | {ratio} |"
        )
    return out


def _memory(curves: Curves) -> list[str]:
    m = curves.memory
    if m is None:
        return []
    return [
        "",
        f"- client memory: {m.runs} active runs on one store grew RSS by "
        f"{(m.rss_after - m.rss_before) / 2**20:.1f} MiB ({m.per_run:.0f} B per run); the head "
        f"cache holds {m.cached_heads} of them (limit {m.cache_limit}), "
        f"{m.per_cached_run:.0f} B of RSS growth per cached run",
    ]


def render_curves(curves: Curves, labels: dict[str, str]) -> list[str]:
    """The curve tables of one backend, as Markdown lines."""
    out = _commit_cost(curves) + _bytes(curves) + _throughput(curves) + _resume(curves, labels)
    out += _memory(curves)
    for where, error in curves.errors.items():
        out.append(f"- FAILED {where}: {error}")
    return out
