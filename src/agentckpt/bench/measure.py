"""Latency samples, percentiles and throughput: the arithmetic of the benchmark."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Latencies", "Summary", "percentile", "summarize", "timed"]

T = TypeVar("T")


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in 0..1) of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(math.ceil(fraction * len(sorted_values)), 1)
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass(frozen=True, slots=True)
class Summary:
    """Percentiles of a latency sample, in milliseconds."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float
    mean: float

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON object (milliseconds, rounded to microseconds)."""
        return {
            "count": self.count,
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "p99_ms": round(self.p99, 3),
            "max_ms": round(self.max, 3),
            "mean_ms": round(self.mean, 3),
        }


def summarize(seconds: Sequence[float]) -> Summary:
    """Summarize latencies given in seconds."""
    values = sorted(s * 1000.0 for s in seconds)
    if not values:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    return Summary(
        count=len(values),
        p50=percentile(values, 0.50),
        p95=percentile(values, 0.95),
        p99=percentile(values, 0.99),
        max=values[-1],
        mean=sum(values) / len(values),
    )


@dataclass(slots=True)
class Latencies:
    """A growing sample of latencies in seconds."""

    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        """Record one latency."""
        self.samples.append(seconds)

    def summary(self) -> Summary:
        """Percentiles of what was recorded."""
        return summarize(self.samples)


async def timed(sample: Latencies, call: Callable[[], Awaitable[T]]) -> T:
    """Await ``call()`` and record how long it took (monotonic, high resolution)."""
    start = time.perf_counter()
    result = await call()
    sample.add(time.perf_counter() - start)
    return result
