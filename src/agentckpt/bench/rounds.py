"""Repeated rounds (``--repeat``): a subject's figures over rounds, as their medians.

On a shared or virtual machine one run of a subject can be slowed by anything else the
host does, and a ratio between two subjects measured a minute apart moves with it. With
``--repeat N`` every workload runs N times, all subjects once in each round, one after
the other, so each round's subjects meet about the same conditions; each figure is then
the median of its N values (a percentile's median over the rounds' own percentiles), and
the JSON keeps every round.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar

from agentckpt.bench.measure import Summary
from agentckpt.bench.sites import Storage

__all__ = ["median_figures", "median_storage"]

F = TypeVar("F")


def _median(values: Sequence[Any]) -> Any:
    """The median of numbers (an int stays an int), of summaries (each percentile's),
    or None when any round has none."""
    if any(v is None for v in values):
        return None
    first = values[0]
    if isinstance(first, Summary):
        return Summary(
            count=first.count,
            p50=statistics.median(v.p50 for v in values),
            p95=statistics.median(v.p95 for v in values),
            p99=statistics.median(v.p99 for v in values),
            max=statistics.median(v.max for v in values),
            mean=statistics.median(v.mean for v in values),
        )
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    middle = statistics.median(values)
    return round(middle) if isinstance(first, int) else middle


def median_figures(rounds: Sequence[F]) -> F:
    """One figures object (a frozen dataclass) whose every field is the median of that
    field over ``rounds``; the only round's own when there is one."""
    if len(rounds) == 1:
        return rounds[0]
    first: Any = rounds[0]
    medians = {f.name: _median([getattr(r, f.name) for r in rounds]) for f in fields(first)}
    result: F = replace(first, **medians)
    return result


def median_storage(rounds: Sequence[Storage]) -> Storage:
    """The storage of the round whose stored bytes are the median (the lower middle one
    of an even count): what one of the runs really left, not a blend of several."""
    ordered = sorted(rounds, key=lambda s: s.bytes)
    return ordered[(len(ordered) - 1) // 2]
