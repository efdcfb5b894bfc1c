"""The targets the benchmark checks, each a ratio measured side by side in one run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.results import AGENTCKPT, BackendResults

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
    """``value`` under ``limit`` milliseconds, or at most ``limit`` rows."""
    if value is None:
        return Verdict(results.dialect, target, "not measured", None)
    if unit == "ms":
        return Verdict(results.dialect, target, f"{value:.2f} ms", value < limit)
    return Verdict(results.dialect, target, f"{value:.0f} {unit}", value <= limit)


def evaluate(results: BackendResults) -> list[Verdict]:
    """Every target on this backend."""
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

    def run_bytes(name: str) -> float | None:
        case = results.long_run.get(name)
        return float(case.storage.bytes) if case else None

    # Resume is timed after each mode's run; the target takes the worse P99 of the two.
    resumes = [
        case.figures.resume_latency.p99
        for cases in results.conversations.values()
        if (case := cases.get(AGENTCKPT)) is not None
    ]
    ours_run = results.long_run.get(AGENTCKPT)
    turns = results.turns
    return [
        _ratio(
            results,
            "conversation storage >= 10x smaller than (a)",
            10,
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
            "saturated throughput >= 3x (a)",
            3,
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
            f"long run ({results.steps} steps): at most 100 rows",
            float(ours_run.storage.rows) if ours_run else None,
            100,
            "rows",
        ),
        _ratio(
            results,
            "long run: >= 10x fewer bytes than (a)",
            10,
            "seed000",
            run_bytes,
            higher_is_better=False,
        ),
        _limit(
            results,
            f"resume P99 < 10 ms, {turns}-turn conversation (worse mode)",
            max(resumes) if resumes else None,
            10,
            "ms",
        ),
        _limit(
            results,
            f"resume P99 < 10 ms, {results.steps}-step run",
            ours_run.figures.resume_latency.p99 if ours_run else None,
            10,
            "ms",
        ),
    ]
