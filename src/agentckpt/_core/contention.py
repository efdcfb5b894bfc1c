"""How long a writer that lost a race for a run's head waits before it tries again."""

from __future__ import annotations

import random

__all__ = ["lost_race_pause"]

# Random, doubling up to the ceiling: two writers retrying in lockstep would otherwise
# let the faster one (its head cached, its read skipped) win every round and starve the
# other through all its attempts.
_FIRST = 0.001
_CEILING = 0.05


def lost_race_pause(attempt: int) -> float:
    """Seconds to wait after the ``attempt``-th (from 1) commit lost to another writer:
    uniform in ``[0, min(0.05, 0.001 * 2**attempt)]``."""
    return random.uniform(0, min(_CEILING, _FIRST * 2**attempt))
