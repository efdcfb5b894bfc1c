"""The report shows agentckpt's full read beside its resume, and "-" where not measured."""

from __future__ import annotations

from dataclasses import replace

from agentckpt.bench.curves.model import FULL_READ, FULL_READ_LABEL, Curves, ResumeScaling
from agentckpt.bench.curves.render import render_curves
from agentckpt.bench.measure import summarize
from agentckpt.bench.report import render, to_json
from agentckpt.bench.results import AGENTCKPT
from tests.unit.bench.test_targets import _conv, _results


def test_the_full_read_has_its_own_rows_and_json() -> None:
    results = _results()
    cases = results.conversations["saturated"]
    ours = cases[AGENTCKPT]
    full = summarize([0.004, 0.006])
    cases[AGENTCKPT] = replace(ours, figures=replace(ours.figures, full_read_latency=full))
    text = render([results])
    rows = [line for line in text.splitlines() if line.startswith("| resume, all history read")]
    assert len(rows) == 4  # P50 and P99, paced (not measured here) then saturated
    assert rows[0].startswith("| resume, all history read P50 (ms) | - |")
    cells = [cell.strip() for cell in rows[2].strip("|").split("|")]
    assert cells[1] == f"{full.p50:.2f}"  # agentckpt's P50, in ms
    assert set(cells[2:]) == {"-"}  # the baselines have no such read, so no ratio either
    conversation = to_json([results], {})["backends"][results.dialect]["conversation"]
    assert conversation["saturated"][AGENTCKPT]["full_read_latency"]["count"] == 2
    assert all(
        case["full_read_latency"] is None
        for name, case in conversation["saturated"].items()
        if name != AGENTCKPT
    )


def test_the_curve_table_labels_the_full_read() -> None:
    curves = Curves(
        turns=1000,
        steps=10,
        resume=[
            ResumeScaling(AGENTCKPT, 30, 1000, 1.0, 2.0, 1.5, 3.0),
            ResumeScaling(FULL_READ, 30, 1000, 1.0, 2.0, 9.0, 20.0),
        ],
    )
    lines = render_curves(curves, {AGENTCKPT: "agentckpt"})
    assert any(line.startswith(f"| {FULL_READ_LABEL} | 30 |") for line in lines)
    assert any("`open()`" in line for line in lines)


def test_a_case_without_a_full_read_renders() -> None:
    assert _conv(1.0, 1.0, 10, 1.0).figures.full_read_latency is None
