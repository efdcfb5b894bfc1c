"""The telemetry benchmark's hooks-only mode (quick settings)."""

from __future__ import annotations

import json
from pathlib import Path

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
