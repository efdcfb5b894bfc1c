"""Targets are judged from the measured ratios: met, missed, or not measurable."""

from __future__ import annotations

from agentckpt.bench.content import ContentSize
from agentckpt.bench.curves.model import CommitCurve, Curves, Memory, ResumeScaling
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


def _run(rows: int, size: int, resume_ms: float, cpu: float = 0.5) -> LongRunCase:
    figures = LongRunFigures(
        steps=1000,
        wall_seconds=1.0,
        cpu_seconds=cpu,
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
    results.long_runs[30] = {"agentckpt": _run(40, 100, 3.0), "seed000": _run(1001, 900, 1.0)}
    results.long_runs[300] = {
        "agentckpt": _run(40, 100, 2.0, cpu=0.9),
        "seed000": _run(1001, 9000, 1.0),
    }
    results.content = ContentSize(states=10, json_bytes=3_000, zstd_bytes=800)
    results.skipped["langgraph"] = "langgraph-checkpoint-postgres is not installed"
    results.skipped["batched"] = "not asked for"
    return results


def test_each_target_reports_its_ratio_and_verdict() -> None:
    verdicts = {v.target: v for v in evaluate(_results())}
    storage = verdicts["conversation storage >= 15x smaller than (a)"]
    assert (storage.measured, storage.status) == ("50.00x", "met")
    floor = verdicts["conversation storage <= 1.5x the zstd-compressed content"]
    assert (floor.measured, floor.status) == ("1.25x", "met")
    throughput = verdicts["saturated throughput >= 8x (a)"]
    assert (throughput.measured, throughput.status) == ("5.00x", "MISSED")
    batched = verdicts["saturated throughput >= 0.25x the batched floor (d)"]
    assert (batched.measured, batched.status) == ("not asked for", "n/a")
    paced = verdicts["paced write P99 no worse than (a)"]
    assert (paced.measured, paced.status) == ("0.80x", "MISSED")
    assert verdicts["long run, 30 keys (1000 steps): at most 100 rows"].status == "met"
    run_bytes = verdicts["long run, 30 keys: >= 10x fewer bytes than (a)"]
    assert (run_bytes.measured, run_bytes.status) == ("9.00x", "MISSED")
    assert verdicts["long run, 300 keys: >= 10x fewer bytes than (a)"].status == "met"
    resume = verdicts["resume P99 <= 3 ms, 30-turn conversation (worse mode)"]
    assert (resume.measured, resume.status) == ("2.00 ms", "met")
    assert verdicts["long run, 30 keys: resume P99 <= 3 ms"].status == "met"  # 3.00 ms
    shapes = verdicts["long run: client CPU per step, 300 keys within 1.5x of 30 keys"]
    assert (shapes.measured, shapes.status) == ("1.80x", "MISSED")
    steps = verdicts["long run, 30 keys: steps/s >= 1.5x (a)"]
    assert (steps.measured, steps.status) == ("1.00x", "MISSED")
    # No curves measured: no curve targets.
    assert not [t for t in verdicts if "turn 500" in t]


def test_curve_targets_read_the_turn_windows_resume_and_memory() -> None:
    results = _results()
    flat = CommitCurve("agentckpt", "agentckpt", cpu_ms=[1.0] * 1000, wall_ms=[2.0] * 1000)
    growing = CommitCurve(
        "agentckpt-commit", "commit", cpu_ms=[1.0 + t / 250 for t in range(1000)], wall_ms=[1.0]
    )
    results.curves = Curves(
        turns=1000,
        steps=10_000,
        commit_cost=[flat, growing],
        resume=[ResumeScaling("agentckpt", 30, 1000, 1.0, 2.0, 2.0, 5.0)],
        memory=Memory(10_000, 100, 100 + 256 * 1000, 256, 256),
    )
    verdicts = {v.target: v for v in evaluate(results)}
    api = verdicts["client CPU per commit at turn 500 within 1.3x of turn 10 (conversation API)"]
    assert (api.measured, api.status) == ("1.00x", "met")
    commit = verdicts["client CPU per commit at turn 500 within 1.3x of turn 10 (Store.commit)"]
    assert commit.status == "MISSED"  # 3.08 / 1.11
    resume = verdicts["resume P99 of a 1000-turn conversation within 2x of a 30-turn one"]
    assert (resume.measured, resume.status) == ("2.50x", "MISSED")
    memory = verdicts["client memory bounded with 10000 active runs (head cache within its limit)"]
    assert memory.status == "met"
    assert "256/256 heads cached" in memory.measured


def test_a_skipped_baseline_makes_its_targets_not_applicable() -> None:
    lg = [v for v in evaluate(_results()) if "langgraph" in v.target]
    assert len(lg) == 2
    assert all(v.status == "n/a" for v in lg)
    assert all("not installed" in v.measured for v in lg)
