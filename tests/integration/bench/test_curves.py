"""``agentckpt bench --curves --plots``: the curves exist, are sane, and the PNGs are valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentckpt.bench import cli

PNG = b"\x89PNG\r\n\x1a\n"
TURNS = 40
STEPS = 100


def _run(tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "bench.json"
    code = cli.main(
        [
            "--quick",
            "--backend",
            "sqlite",
            "--mode",
            "saturated",
            "--subjects",
            "agentckpt,seed000,batched",
            "--state-keys",
            "30",
            "--sqlite-dir",
            str(tmp_path / "db"),
            "--json",
            str(out),
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    backend: dict[str, Any] = json.loads(out.read_text())["backends"]["sqlite"]
    return backend


def test_curves_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = _run(tmp_path, "--plots", str(tmp_path / "img"))
    curves = backend["curves"]
    assert curves["errors"] == {}
    assert curves["turns"] == TURNS
    assert curves["steps"] == STEPS
    names = {"agentckpt", "agentckpt-commit", "seed000", "batched"}
    assert set(curves["commit_cost"]) == names
    for curve in curves["commit_cost"].values():
        assert len(curve["cpu_ms_per_commit"]) == len(curve["wall_ms_per_commit"]) == TURNS
        assert all(v > 0 for v in curve["wall_ms_per_commit"])
    for curve in curves["bytes_by_turn"].values():
        turns = [n for n, _ in curve["points"]]
        assert turns == list(range(4, TURNS + 1, 4))
        assert all(b > 0 for _, b in curve["points"])
    seed_bytes = [b for _, b in curves["bytes_by_step"]["seed000"]["points"]]
    assert len(seed_bytes) == 10
    assert seed_bytes[-1] > seed_bytes[0]
    assert set(curves["bytes_by_step"]) == {"agentckpt", "seed000", "batched"}
    for curve in curves["throughput"].values():
        assert [p["agents"] for p in curve["points"]] == [1, 4]
        assert all(p["writes_per_s"] > 0 for p in curve["points"])
    resume = curves["resume"]["agentckpt"]
    assert (resume["short_turns"], resume["long_turns"]) == (30, TURNS)
    assert 0 < resume["short_p50_ms"] <= resume["short_p99_ms"]
    memory = curves["memory"]
    assert memory["runs"] == 200
    assert 0 < memory["cached_heads"] <= memory["cache_limit"]
    # The curve targets: growth needs 540 turns, resume 1000, so those are n/a here.
    statuses = {t["target"]: t["status"] for t in backend["targets"]}
    growth = [s for t, s in statuses.items() if "turn 500 within 1.3x" in t]
    assert growth == ["n/a", "n/a"]
    assert statuses["client memory bounded with 200 active runs (head cache within its limit)"]
    for kind in ("commit-cost", "bytes", "throughput"):
        image = (tmp_path / "img" / f"sqlite-{kind}.png").read_bytes()
        assert image.startswith(PNG)
        assert len(image) > 10_000
    printed = capsys.readouterr().out
    assert "#### Client CPU / wall ms per commit against turn number" in printed
    assert "agentckpt Store.commit (hint-free)" in printed


def test_the_overlapped_subject_adds_its_long_run_curve_and_no_conversation_curve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # AgentckptOverlap is an Agentckpt: it must not measure the plain store's hint-free
    # Store.commit curve again (a second row, and the target read from either), nor the
    # conversation curves, which are the default subject's code path.
    backend = _run(tmp_path, "--curves", "--overlap")
    curves = backend["curves"]
    assert set(curves["commit_cost"]) == {"agentckpt", "agentckpt-commit", "seed000", "batched"}
    # The overlapped loop is a long-run subject: its curve is the bytes by step.
    assert "agentckpt_overlap" in curves["bytes_by_step"]
    assert "agentckpt_overlap" not in curves["throughput"]
    printed = capsys.readouterr().out
    cost = printed.split("#### Client CPU / wall ms per commit against turn number")[1]
    cost = cost.split("####")[0]
    assert cost.count("| agentckpt Store.commit (hint-free) |") == 1


def test_batched_floor_groups_concurrent_writes(tmp_path: Path) -> None:
    backend = _run(tmp_path, "--agents", "8")
    saturated = backend["conversation"]["saturated"]
    assert saturated["batched"]["writes"] == 2 * 8 * 3
    # Same rows and bytes as the per-write floor writes: only the transactions differ.
    rows = saturated["batched"]["storage"]["tables"]["floor_writes"]["rows"]
    assert rows == 2 * 8 * 3
    verdicts = {t["target"]: t for t in backend["targets"]}
    batched = verdicts["saturated throughput >= 0.25x the batched floor (d)"]
    assert batched["status"] in {"met", "MISSED"}
    assert batched["measured"].endswith("x")


def test_plots_without_matplotlib_say_so_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "has_matplotlib", lambda: False)
    code = cli.main(["--quick", "--backend", "sqlite", "--plots", str(tmp_path / "img")])
    assert code == 2
    assert capsys.readouterr().err == (
        "agentckpt bench: --plots needs matplotlib: pip install 'agentckpt[bench]'\n"
    )
    assert not (tmp_path / "img").exists()
