"""When a step is stored whole (a snapshot) and when as a delta against its parent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["snapshot", "delta"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotPolicy:
    """Snapshot cadence and pruning.

    A step is a snapshot when the run has none yet, when ``interval`` steps have passed
    since the last one, when the deltas since it would pass ``max_chain_bytes``, or when
    the delta would not be smaller than the state itself. Resume reads the newest
    snapshot plus the deltas after it, so these bounds also bound resume cost.

    With ``prune=True`` each new snapshot deletes every older step of the run, which
    keeps a run's rows and bytes bounded however long it runs; the newest snapshot and
    every step after it are never deleted. With ``prune=False`` every step is kept for
    time travel and forks.

    Example::

        SnapshotPolicy(interval=50, prune=False)
    """

    interval: int = 20
    max_chain_bytes: int = 4 * 1024 * 1024
    prune: bool = True

    def __post_init__(self) -> None:
        # bool is an int subclass: interval=True would be a cadence of one step by accident.
        if type(self.interval) is not int or self.interval < 1:
            raise ValueError(f"interval must be an integer >= 1, got {self.interval!r}")
        if type(self.max_chain_bytes) is not int or self.max_chain_bytes < 0:
            raise ValueError(
                f"max_chain_bytes must be an integer >= 0, got {self.max_chain_bytes!r}"
            )
        if type(self.prune) is not bool:
            raise ValueError(f"prune must be True or False, got {self.prune!r}")

    def choose(
        self,
        *,
        steps_since_snapshot: int | None,
        chain_bytes: int,
        delta_bytes: int,
        state_bytes: int,
    ) -> Kind:
        """Pick the kind of the next step.

        ``steps_since_snapshot`` is None when the run has no snapshot to build on.
        Sizes are encoded bytes before compression, so the choice is deterministic.
        """
        if steps_since_snapshot is None or steps_since_snapshot >= self.interval:
            return "snapshot"
        if chain_bytes + delta_bytes > self.max_chain_bytes:
            return "snapshot"
        if delta_bytes >= state_bytes:
            return "snapshot"
        return "delta"
