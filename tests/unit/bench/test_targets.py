"""Targets are judged from the measured ratios: met, missed, or not measurable."""

from __future__ import annotations

from agentckpt.bench.driver import ConversationFigures, LongRunFigures
from agentckpt.bench.measure import summarize
from agentckpt.bench.results import BackendResults, ConversationCase, LongRunCase
from agentckpt.bench.sites import Storage
from agentckpt.bench.targets import evaluate


def _conv(write_ms: float, wall: float, size: int, resume_ms: float) -> ConversationCase:
    figures = ConversationFigures(
        writes=200,
        turns=100,
        wall_seconds=wall,
        cpu_seconds=0.5,
        write_latency=summarize([write_ms / 1000] * 10),
        read_latency=summarize([resume_ms / 1000]),
        resume_latency=summarize([resume_ms / 1000]),
    )
    return ConversationCase(figures, Storage(rows=10, bytes=size, tables={}, live_bytes=size))


def _run(rows: int, size: int, resume_ms: float) -> LongRunCase:
    figures = LongRunFigures(
        steps=1000,
        wall_seconds=1.0,
        cpu_seconds=0.5,
        write_latency=summarize([0.001]),
        read_latency=summarize([resume_ms / 1000]),
        resume_latency=summarize([resume_ms / 1000]),
    )
    return LongRunCase(figures, Storage(rows=rows, bytes=size, tables={}, live_bytes=size))


def _results() -> BackendResults:
    results = BackendResults(
        dialect="postgresql",
        server={},
        labels={"agentckpt": "agentckpt", "seed000": "(a) seed-000", "floor": "(b) floor"},
        agents=10,
        turns=30,
        steps=1000,
    )
    for mode in ("paced", "saturated"):
        results.conversations[mode] = {
            "agentckpt": _conv(5.0, 1.0, 1_000, 2.0),
            "seed000": _conv(4.0, 5.0, 50_000, 3.0),
        }
    results.long_run = {"agentckpt": _run(40, 100, 3.0), "seed000": _run(1001, 900, 1.0)}
    results.skipped["langgraph"] = "langgraph-checkpoint-postgres is not installed"
    return results


def test_each_target_reports_its_ratio_and_verdict() -> None:
    verdicts = {v.target: v for v in evaluate(_results())}
    storage = verdicts["conversation storage >= 10x smaller than (a)"]
    assert (storage.measured, storage.status) == ("50.00x", "met")
    throughput = verdicts["saturated throughput >= 3x (a)"]
    assert (throughput.measured, throughput.status) == ("5.00x", "met")
    paced = verdicts["paced write P99 no worse than (a)"]
    assert (paced.measured, paced.status) == ("0.80x", "MISSED")
    assert verdicts["long run (1000 steps): at most 100 rows"].status == "met"
    run_bytes = verdicts["long run: >= 10x fewer bytes than (a)"]
    assert (run_bytes.measured, run_bytes.status) == ("9.00x", "MISSED")
    assert verdicts["resume P99 < 10 ms, 30-turn conversation (worse mode)"].status == "met"


def test_a_skipped_baseline_makes_its_targets_not_applicable() -> None:
    lg = [v for v in evaluate(_results()) if "langgraph" in v.target]
    assert len(lg) == 2
    assert all(v.status == "n/a" for v in lg)
    assert all("not installed" in v.measured for v in lg)
