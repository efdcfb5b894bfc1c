"""The report: side-by-side tables with agentckpt's advantage over each baseline, and JSON.

An advantage column reads "how many times better agentckpt is than that baseline" for
every row: baseline / agentckpt for latencies, rows and bytes (lower is better),
agentckpt / baseline for throughput. Above 1 agentckpt is ahead, below 1 behind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.curves.render import render_curves
from agentckpt.bench.driver import ConversationFigures, LongRunFigures
from agentckpt.bench.measure import Summary, summarize
from agentckpt.bench.results import AGENTCKPT, BackendResults, ConversationCase, LongRunCase
from agentckpt.bench.targets import Verdict, evaluate

__all__ = ["render", "to_json"]


@dataclass(frozen=True, slots=True)
class _Row:
    label: str
    value: Callable[[Any], float]
    unit: str  # "ms", "/s", "rows", "bytes"
    higher_is_better: bool = False


def _percentile(pick: Callable[[Any], Summary], key: str) -> Callable[[Any], float]:
    def value(case: Any) -> float:
        result: float = getattr(pick(case), key)
        return result

    return value


def _per(seconds: float | None, count: int) -> float:
    """Milliseconds per item, NaN when not measured (shown as "-")."""
    return math.nan if seconds is None else 1000 * seconds / max(count, 1)


def _full_read(figures: ConversationFigures) -> Summary:
    """The resume that reads every archived message too; "-" where not measured."""
    return figures.full_read_latency or summarize([])


def _latency_rows(prefix: str, pick: Callable[[Any], Summary], keys: str) -> list[_Row]:
    return [_Row(f"{prefix} {k.upper()} (ms)", _percentile(pick, k), "ms") for k in keys.split()]


def _conversation_rows(agents: int) -> list[_Row]:
    def fig(case: ConversationCase) -> ConversationFigures:
        return case.figures

    return [
        *_latency_rows("write", lambda c: fig(c).write_latency, "p50 p95 p99 max"),
        _Row("writes/s", lambda c: fig(c).writes_per_second, "/s", True),
        _Row("turns/s", lambda c: fig(c).turns_per_second, "/s", True),
        _Row(
            "client CPU ms per write",
            lambda c: 1000 * fig(c).cpu_seconds / max(fig(c).writes, 1),
            "ms",
        ),
        _Row(
            "server CPU ms per write",
            lambda c: _per(fig(c).server_cpu_seconds, fig(c).writes),
            "ms",
        ),
        *_latency_rows("latest read", lambda c: fig(c).read_latency, "p50 p99"),
        *_latency_rows("resume", lambda c: fig(c).resume_latency, "p50 p99"),
        *_latency_rows("resume, all history read", lambda c: _full_read(fig(c)), "p50 p99"),
        _Row("rows stored", lambda c: c.storage.rows, "rows"),
        _Row("rows per conversation", lambda c: c.storage.rows / max(agents, 1), "rows"),
        _Row("bytes stored", lambda c: c.storage.bytes, "bytes"),
        _Row("bytes per conversation", lambda c: c.storage.bytes / max(agents, 1), "bytes"),
        _Row(
            "live bytes per conversation", lambda c: c.storage.live_bytes / max(agents, 1), "bytes"
        ),
    ]


def _long_run_rows() -> list[_Row]:
    def fig(case: LongRunCase) -> LongRunFigures:
        return case.figures

    return [
        *_latency_rows("write", lambda c: fig(c).write_latency, "p50 p95 p99 max"),
        _Row("steps/s", lambda c: fig(c).steps_per_second, "/s", True),
        _Row(
            "client CPU ms per step",
            lambda c: 1000 * fig(c).cpu_seconds / max(fig(c).steps, 1),
            "ms",
        ),
        _Row(
            "server CPU ms per step",
            lambda c: _per(fig(c).server_cpu_seconds, fig(c).steps),
            "ms",
        ),
        *_latency_rows("latest read", lambda c: fig(c).read_latency, "p50 p99"),
        *_latency_rows("resume", lambda c: fig(c).resume_latency, "p50 p99"),
        _Row("rows stored (run)", lambda c: c.storage.rows, "rows"),
        _Row("bytes stored (run)", lambda c: c.storage.bytes, "bytes"),
        _Row("live bytes (run)", lambda c: c.storage.live_bytes, "bytes"),
    ]


def _format(value: float, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "ms":
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    if unit == "/s":
        return f"{value:.1f}" if value < 1000 else f"{value:.0f}"
    if unit == "bytes":
        for size, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if value >= size:
                return f"{value / size:.1f} {suffix}"
        return f"{value:.0f} B"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _advantage(ours: float, theirs: float, higher_is_better: bool) -> str:
    if not ours or not theirs or math.isnan(ours) or math.isnan(theirs):
        return "-"
    ratio = ours / theirs if higher_is_better else theirs / ours
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.0f}x"


def _table(results: BackendResults, cases: dict[str, Any], rows: list[_Row]) -> list[str]:
    names = [name for name in results.labels if name in cases]
    baselines = [name for name in names if name != AGENTCKPT]
    ours = cases.get(AGENTCKPT)
    header = ["figure", *(results.labels[n] for n in names)]
    if ours is not None:
        header += [f"vs {results.labels[n].split(' ')[0]}" for n in baselines]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.label, *(_format(row.value(cases[n]), row.unit) for n in names)]
        if ours is not None:
            cells += [
                _advantage(row.value(ours), row.value(cases[n]), row.higher_is_better)
                for n in baselines
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _verdict_lines(verdicts: list[Verdict]) -> list[str]:
    lines = ["| target | measured | status |", "|---|---|---|"]
    lines += [f"| {v.target} | {v.measured} | {v.status} |" for v in verdicts]
    return lines


def render(all_results: list[BackendResults]) -> str:
    """The report as Markdown (readable as plain text too)."""
    out: list[str] = []
    for results in all_results:
        title = "PostgreSQL" if results.dialect == "postgresql" else "SQLite"
        out.append(f"## {title}")
        out.append("")
        if results.server.get("autovacuum") == "off":
            out.append(
                "- note: autovacuum is off on this server, so dead row versions stay on disk; "
                "'live bytes' is the size after VACUUM FULL"
            )
        if results.repeat > 1:
            out.append(
                f"- each figure is the median of {results.repeat} rounds, every subject once "
                "a round, one after the other (--repeat; the JSON has each round)"
            )
        for name, reason in results.skipped.items():
            out.append(f"- skipped {results.labels.get(name, name)}: {reason}")
        for where, error in results.errors.items():
            out.append(f"- FAILED {where}: {error}")
        if out[-1] != "":
            out.append("")
        if results.content is not None:
            out += _floor_lines(results)
        for mode, cases in results.conversations.items():
            out.append(
                f"### Conversations, {mode}: {results.agents} agents x {results.turns} turns"
            )
            out.append("")
            out += _table(results, cases, _conversation_rows(results.agents))
            out.append("")
        for keys, runs in results.long_runs.items():
            if runs:
                out.append(f"### Long run: {results.steps} steps, {keys}-key state")
                out.append("")
                out += _table(results, runs, _long_run_rows())
                out.append("")
        if results.curves is not None:
            out.append(f"### Curves ({title})")
            out.append("")
            out += render_curves(results.curves, results.labels)
            out.append("")
        out.append(f"### Targets ({title})")
        out.append("")
        out += _verdict_lines(evaluate(results))
        out.append("")
    return "\n".join(out)


def _floor_lines(results: BackendResults) -> list[str]:
    content = results.content
    assert content is not None
    mode = results.storage_mode()
    lines = [
        f"- storage floor: the content written ({content.states} final states) is "
        f"{_format(content.json_bytes, 'bytes')} of JSON, "
        f"{_format(content.zstd_bytes, 'bytes')} zstd-compressed (level 3, each state alone)",
    ]
    for name, case in (results.conversations.get(mode, {}) if mode else {}).items():
        lines.append(
            f"  - {results.labels[name]}: {_format(case.storage.bytes, 'bytes')} stored, "
            f"{case.storage.bytes / content.zstd_bytes:.2f}x the floor"
        )
    return [*lines, ""]


def _conversation_json(case: ConversationCase, agents: int) -> dict[str, Any]:
    out = _conversation_figures_json(case.figures) | {
        "storage": case.storage.to_json()
        | {
            "rows_per_conversation": case.storage.rows / max(agents, 1),
            "bytes_per_conversation": case.storage.bytes / max(agents, 1),
        },
    }
    if case.rounds:
        out["rounds"] = [_conversation_figures_json(f) for f in case.rounds]
    return out


def _conversation_figures_json(f: ConversationFigures) -> dict[str, Any]:
    return {
        "writes": f.writes,
        "turns": f.turns,
        "wall_s": round(f.wall_seconds, 3),
        "client_cpu_s": round(f.cpu_seconds, 3),
        "server_cpu_s": _round(f.server_cpu_seconds),
        "writes_per_s": round(f.writes_per_second, 2),
        "turns_per_s": round(f.turns_per_second, 2),
        "write_latency": f.write_latency.to_json(),
        "read_latency": f.read_latency.to_json(),
        "resume_latency": f.resume_latency.to_json(),
        "full_read_latency": f.full_read_latency.to_json() if f.full_read_latency else None,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _long_run_json(case: LongRunCase) -> dict[str, Any]:
    out = _long_run_figures_json(case.figures) | {"storage": case.storage.to_json()}
    if case.rounds:
        out["rounds"] = [_long_run_figures_json(f) for f in case.rounds]
    return out


def _long_run_figures_json(f: LongRunFigures) -> dict[str, Any]:
    return {
        "steps": f.steps,
        "wall_s": round(f.wall_seconds, 3),
        "client_cpu_s": round(f.cpu_seconds, 3),
        "server_cpu_s": _round(f.server_cpu_seconds),
        "steps_per_s": round(f.steps_per_second, 2),
        "write_latency": f.write_latency.to_json(),
        "read_latency": f.read_latency.to_json(),
        "resume_latency": f.resume_latency.to_json(),
    }


def _ratios(results: BackendResults) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tables: list[tuple[str, dict[str, Any], list[_Row]]] = [
        (f"conversation_{mode}", cases, _conversation_rows(results.agents))
        for mode, cases in results.conversations.items()
    ]
    tables += [
        (f"long_run_{keys}_keys", dict(cases), _long_run_rows())
        for keys, cases in results.long_runs.items()
    ]
    for key, cases, rows in tables:
        ours = cases.get(AGENTCKPT)
        if ours is None:
            continue
        per_baseline: dict[str, Any] = {}
        for name in results.baselines():
            if name not in cases:
                continue
            per_row = {}
            for row in rows:
                mine, theirs = row.value(ours), row.value(cases[name])
                if mine and theirs and not math.isnan(mine) and not math.isnan(theirs):
                    ratio = mine / theirs if row.higher_is_better else theirs / mine
                    per_row[row.label] = round(ratio, 3)
            per_baseline[name] = per_row
        out[key] = per_baseline
    return out


def to_json(all_results: list[BackendResults], settings: dict[str, Any]) -> dict[str, Any]:
    """The report as a JSON document: settings, figures, advantages and targets."""
    backends: dict[str, Any] = {}
    for results in all_results:
        backends[results.dialect] = {
            "server": results.server,
            "subjects": results.labels,
            "skipped": results.skipped,
            "errors": results.errors,
            "conversation": {
                mode: {
                    name: _conversation_json(case, results.agents) for name, case in cases.items()
                }
                for mode, cases in results.conversations.items()
            },
            "content": results.content.to_json() if results.content else None,
            "long_run": {
                f"{keys}_keys": {name: _long_run_json(case) for name, case in cases.items()}
                for keys, cases in results.long_runs.items()
            },
            "curves": results.curves.to_json() if results.curves else None,
            "advantage": _ratios(results),
            "targets": [v.to_json() for v in evaluate(results)],
        }
    return {"settings": settings, "backends": backends}
