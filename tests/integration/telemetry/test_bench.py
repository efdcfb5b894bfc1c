"""The telemetry benchmark: its hooks-only mode and short rounds of each workload."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentckpt import Store
from agentckpt.bench import telemetry as bench


def test_hook_cost_is_positive_for_each_configuration() -> None:
    for traces in (None, 0.0, 0.5, 1.0):
        assert bench.hook_cost(traces=traces, commits=200, repeats=1) > 0


def test_hooks_mode_writes_each_configuration(tmp_path: Path) -> None:
    out = tmp_path / "hooks.json"
    assert (
        bench.main(["--hooks", "--hook-commits", "100", "--traces", "0.1", "--json", str(out)]) == 0
    )
    costs = json.loads(out.read_text(encoding="utf-8"))["hooks_us_per_commit"]
    assert set(costs) == {"off", "metrics", "traces 0.1", "traces 1"}
    assert all(value > 0 for value in costs.values())
    floors = json.loads(out.read_text(encoding="utf-8"))["sdk_floor_us"]
    assert set(floors) == {"metrics", "traces 0.1", "traces 1"}
    # A recorded span costs something on top of the histogram point.
    assert 0 < floors["metrics"] < floors["traces 1"]


def test_the_sdk_floor_grows_with_the_sampled_share() -> None:
    metrics = bench.sdk_floor(traces=0.0, commits=300, repeats=2)
    every = bench.sdk_floor(traces=1.0, commits=300, repeats=2)
    assert 0 < metrics < every


@pytest.mark.parametrize("workload", ["messages", "conversations"])
def test_a_round_of_each_workload_commits_and_leaves_no_run(tmp_path: Path, workload: str) -> None:
    path = tmp_path / "bench.db"
    for telemetry in (False, True):
        rate, cpu = asyncio.run(
            bench.measure_round(
                f"sqlite:///{path}",
                agents=2,
                seconds=0.3,
                telemetry=telemetry,
                traces=0.5,
                parent=True,
                workload=workload,
            )
        )
        assert rate > 0
        assert cpu > 0
    # Every run a round made is deleted, so the next round (same conversation ids)
    # starts clean.
    with Store.connect(f"sqlite:///{path}") as store:
        assert store.list_runs() == []


def test_the_report_says_which_workload_and_parent(tmp_path: Path) -> None:
    out = tmp_path / "round.json"
    argv = ["--backend", "sqlite", "--sqlite-path", str(tmp_path / "b.db"), "--agents", "2"]
    argv += ["--seconds", "0.2", "--rounds", "1", "--traces", "0.1", "--parent"]
    argv += ["--workload", "conversations", "--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["workload"] == "conversations"
    assert report["parent"] is True
    assert set(report["rounds"]) == {"off", "on"}


def test_each_pair_of_rounds_is_its_own_comparison() -> None:
    drops = bench.paired_drops([100.0, 80.0, 120.0], [95.0, 80.0, 132.0])
    assert drops == pytest.approx([0.05, 0.0, -0.1])
    with pytest.raises(ValueError, match="shorter"):
        bench.paired_drops([1.0, 2.0], [1.0])


def test_the_report_has_the_pairs_drops_and_both_must_meet_the_target(tmp_path: Path) -> None:
    out = tmp_path / "pairs.json"
    argv = ["--backend", "sqlite", "--sqlite-path", str(tmp_path / "p.db"), "--agents", "2"]
    argv += ["--seconds", "0.2", "--rounds", "2", "--traces", "0", "--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert len(report["paired_drops"]) == 2
    assert report["paired_drop"] == pytest.approx(sum(report["paired_drops"]) / 2, abs=1e-4)
    assert report["target_met"] == (report["drop"] <= 0.05 and report["paired_drop"] <= 0.05)


def test_the_floor_publishes_a_span_and_a_point_per_commit_and_nothing_else(
    tmp_path: Path,
) -> None:
    telemetry, shutdown = bench._instrumented(traces=1.0, floor=True)
    tracer_provider, meter_provider, exporter = shutdown
    try:
        with Store.connect(f"sqlite:///{tmp_path}/floor.db", telemetry=telemetry) as store:
            run = store.create_run(agent_id="floor")
            for step in range(3):
                store.commit(run.run_id, {"n": step})
        tracer_provider.force_flush()
        commits = [s for s in exporter.get_finished_spans() if s.name == "agentckpt.commit"]
        assert len(commits) == 3
        assert {s.attributes["agentckpt.step.kind"] for s in commits} <= {"snapshot", "delta"}
        # No counter totals: the floor makes the SDK's calls alone.
        assert telemetry._totals == {}
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


def test_a_floor_round_reports_itself(tmp_path: Path) -> None:
    out = tmp_path / "floor.json"
    argv = ["--backend", "sqlite", "--sqlite-path", str(tmp_path / "f.db"), "--agents", "2"]
    argv += ["--seconds", "0.2", "--rounds", "1", "--traces", "0.5", "--floor"]
    argv += ["--json", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["floor"] is True
    assert all(rate > 0 for rate in report["rounds"]["on"])
