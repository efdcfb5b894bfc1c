"""The targets the benchmark checks, each a ratio measured side by side in one run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.curves.model import window_mean
from agentckpt.bench.results import AGENTCKPT, BackendResults

# The subject of agentckpt's overlapped run loop (--overlap), whose long run has its own
# targets beside the default loop's.
OVERLAP = "agentckpt_overlap"

__all__ = ["Verdict", "evaluate"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target: what it asks, what was measured, and whether it was met."""

    backend: str
    target: str
    measured: str
    met: bool | None  # None: could not be measured (a subject was skipped or failed)

    @property
    def status(self) -> str:
        """``met``, ``MISSED`` or ``n/a``."""
        return "n/a" if self.met is None else ("met" if self.met else "MISSED")

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "backend": self.backend,
            "target": self.target,
            "measured": self.measured,
            "status": self.status,
        }


def _ratio(
    results: BackendResults,
    target: str,
    minimum: float,
    baseline: str,
    value: Callable[[str], float | None],
    *,
    higher_is_better: bool,
) -> Verdict:
    ours, theirs = value(AGENTCKPT), value(baseline)
    if ours is None or theirs is None or not ours or not theirs:
        why = results.skipped.get(baseline) or "not measured"
        return Verdict(results.dialect, target, why, None)
    ratio = ours / theirs if higher_is_better else theirs / ours
    return Verdict(results.dialect, target, f"{ratio:.2f}x", ratio >= minimum)


def _limit(
    results: BackendResults, target: str, value: float | None, limit: float, unit: str
) -> Verdict:
    """``value`` at most ``limit`` milliseconds, or at most ``limit`` rows."""
    if value is None:
        return Verdict(results.dialect, target, "not measured", None)
    if unit == "ms":
        return Verdict(results.dialect, target, f"{value:.2f} ms", value <= limit)
    return Verdict(results.dialect, target, f"{value:.0f} {unit}", value <= limit)


def _within(
    results: BackendResults, target: str, ratio: float | None, limit: float, why: str = ""
) -> Verdict:
    """A ratio that must stay at or under ``limit`` (a growth, a multiple of a floor)."""
    if ratio is None:
        return Verdict(results.dialect, target, why or "not measured", None)
    return Verdict(results.dialect, target, f"{ratio:.2f}x", ratio <= limit)


def _conversation_targets(results: BackendResults) -> list[Verdict]:
    lg = "langgraph"
    lg_name = results.labels.get(lg, "(c) langgraph")
    mode = results.storage_mode()

    def conv_bytes(name: str) -> float | None:
        case = results.conversation(mode, name) if mode else None
        return float(case.storage.bytes) if case else None

    def throughput(name: str) -> float | None:
        case = results.conversation("saturated", name)
        return case.figures.turns_per_second if case else None

    def paced_p99(name: str) -> float | None:
        case = results.conversation("paced", name)
        return case.figures.write_latency.p99 if case else None

    ours_bytes = conv_bytes(AGENTCKPT)
    floor = results.content.zstd_bytes if results.content else None
    # Resume is timed after each mode's run; the target takes the worse P99 of the two.
    resumes = [
        case.figures.resume_latency.p99
        for cases in results.conversations.values()
        if (case := cases.get(AGENTCKPT)) is not None
    ]
    return [
        _within(
            results,
            "conversation storage <= 1.5x the zstd-compressed content",
            ours_bytes / floor if ours_bytes and floor else None,
            1.5,
        ),
        _ratio(
            results,
            "conversation storage >= 15x smaller than (a)",
            15,
            "seed000",
            conv_bytes,
            higher_is_better=False,
        ),
        _ratio(
            results,
            f"conversation storage >= 20x smaller than {lg_name}",
            20,
            lg,
            conv_bytes,
            higher_is_better=False,
        ),
        _ratio(
            results,
            "saturated throughput >= 0.25x the batched floor (d)",
            0.25,
            "batched",
            throughput,
            higher_is_better=True,
        ),
        _ratio(
            results,
            "saturated throughput >= 8x (a)",
            8,
            "seed000",
            throughput,
            higher_is_better=True,
        ),
        _ratio(
            results,
            f"saturated throughput >= 10x {lg_name}",
            10,
            lg,
            throughput,
            higher_is_better=True,
        ),
        _ratio(
            results,
            "paced write P99 no worse than (a)",
            1,
            "seed000",
            paced_p99,
            higher_is_better=False,
        ),
        _limit(
            results,
            f"resume P99 <= 3 ms, {results.turns}-turn conversation (worse mode)",
            max(resumes) if resumes else None,
            3,
            "ms",
        ),
    ]


def _long_run_targets(results: BackendResults) -> list[Verdict]:
    out = _long_run_subject_targets(results, AGENTCKPT, "")
    if any(OVERLAP in cases for cases in results.long_runs.values()):
        out += _long_run_subject_targets(results, OVERLAP, " (overlap=True)")
    return out


def _long_run_subject_targets(results: BackendResults, subject: str, mode: str) -> list[Verdict]:
    """The long-run targets of ``subject`` (agentckpt's default loop, or its overlapped
    one: the same targets, said of ``mode``)."""
    out: list[Verdict] = []
    cpu: dict[int, float] = {}
    for keys, cases in results.long_runs.items():
        ours = cases.get(subject)
        shape = f"long run, {keys} keys{mode}"

        def steps_per_s(name: str, cases: dict[str, Any] = cases) -> float | None:
            case = cases.get(subject if name == AGENTCKPT else name)
            return case.figures.steps_per_second if case else None

        def p99(name: str, cases: dict[str, Any] = cases) -> float | None:
            case = cases.get(subject if name == AGENTCKPT else name)
            return case.figures.write_latency.p99 if case else None

        def stored(name: str, cases: dict[str, Any] = cases) -> float | None:
            case = cases.get(subject if name == AGENTCKPT else name)
            return float(case.storage.bytes) if case else None

        if ours is not None:
            cpu[keys] = ours.figures.cpu_seconds / max(ours.figures.steps, 1)
        out += [
            _ratio(
                results,
                f"{shape}: steps/s >= 1.5x (a)",
                1.5,
                "seed000",
                steps_per_s,
                higher_is_better=True,
            ),
            _ratio(
                results,
                f"{shape}: write P99 no worse than (a)",
                1,
                "seed000",
                p99,
                higher_is_better=False,
            ),
            _limit(
                results,
                f"{shape} ({results.steps} steps): at most 100 rows",
                float(ours.storage.rows) if ours else None,
                100,
                "rows",
            ),
            _ratio(
                results,
                f"{shape}: >= 10x fewer bytes than (a)",
                10,
                "seed000",
                stored,
                higher_is_better=False,
            ),
            _limit(
                results,
                f"{shape}: resume P99 <= 3 ms",
                ours.figures.resume_latency.p99 if ours else None,
                3,
                "ms",
            ),
        ]
    if 30 in results.long_runs and 300 in results.long_runs:
        out.append(
            _within(
                results,
                f"long run{mode}: client CPU per step, 300 keys within 1.5x of 30 keys",
                cpu[300] / cpu[30] if 30 in cpu and 300 in cpu and cpu[30] else None,
                1.5,
            )
        )
    return out


def _curve_targets(results: BackendResults) -> list[Verdict]:
    curves = results.curves
    if curves is None:
        return []
    out: list[Verdict] = []
    by_name = {c.subject: c for c in curves.commit_cost}
    for name, what in ((AGENTCKPT, "conversation API"), ("agentckpt-commit", "Store.commit")):
        curve = by_name.get(name)
        early = window_mean(curve.cpu_ms, 10) if curve else None
        late = window_mean(curve.cpu_ms, 500) if curve and len(curve.cpu_ms) >= 540 else None
        out.append(
            _within(
                results,
                f"client CPU per commit at turn 500 within 1.3x of turn 10 ({what})",
                late / early if late is not None and early else None,
                1.3,
                "needs --curve-turns >= 540" if curve else "",
            )
        )
    resume = next((r for r in curves.resume if r.subject == AGENTCKPT), None)
    out.append(
        _within(
            results,
            "resume P99 of a 1000-turn conversation within 2x of a 30-turn one",
            resume.long_p99 / resume.short_p99
            if resume and resume.long_turns >= 1000 and resume.short_p99
            else None,
            2,
            "needs --curve-turns >= 1000" if resume else "",
        )
    )
    memory = curves.memory
    out.append(
        Verdict(
            results.dialect,
            f"client memory bounded with {memory.runs if memory else '?'} active runs "
            "(head cache within its limit)",
            f"{memory.cached_heads}/{memory.cache_limit} heads cached, "
            f"{memory.per_run:.0f} B RSS per run, {memory.per_cached_run:.0f} B per cached run"
            if memory
            else "not measured",
            memory.cached_heads <= memory.cache_limit if memory else None,
        )
    )
    return out


def evaluate(results: BackendResults) -> list[Verdict]:
    """Every target on this backend: conversations, each long-run shape, the curves."""
    return _conversation_targets(results) + _long_run_targets(results) + _curve_targets(results)
