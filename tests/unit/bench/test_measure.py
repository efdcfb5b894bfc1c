"""Percentiles and summaries (pure arithmetic; nothing here is timed)."""

from __future__ import annotations

import math

from agentckpt.bench.measure import percentile, summarize


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([5.0], 0.99) == 5.0
    assert math.isnan(percentile([], 0.5))


def test_summary_is_in_milliseconds() -> None:
    summary = summarize([0.001, 0.002, 0.003, 0.010])
    assert summary.count == 4
    assert summary.p50 == 2.0
    assert summary.max == 10.0
    assert summary.to_json()["p99_ms"] == 10.0
    assert summarize([]).count == 0
