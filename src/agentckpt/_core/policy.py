"""When a step is stored whole (a snapshot) and when as a delta against its parent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["snapshot", "delta"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotPolicy:
    """Snapshot cadence and pruning.

    A step is a snapshot when the run has none yet, when the delta would not be smaller
    than the state itself, when the deltas since the last snapshot would pass
    ``max_chain_bytes``, or once ``interval`` steps have passed since it, provided the
    deltas since it hold at least ``chain_share`` of the state's bytes. A large state
    that changes a little a step is so rewritten once its changes add up to a share of
    it, not every ``interval`` steps: its cost spreads over the bytes that changed.
    ``stretch`` bounds how far: after ``interval * stretch`` steps a snapshot is taken
    whatever the sizes. Resume reads the newest snapshot plus the deltas after it, so
    these bounds also bound resume cost. ``chain_share=0`` (or ``stretch=1``) is a
    snapshot every ``interval`` steps.

    With ``prune=True`` each new snapshot deletes every older step of the run, which
    keeps a run's rows and bytes bounded however long it runs (at most
    ``interval * stretch`` rows); the newest snapshot and every step after it are never
    deleted. With ``prune=False`` every step is kept for time travel and forks.

    Example::

        SnapshotPolicy(interval=50, prune=False)
    """

    interval: int = 20
    chain_share: float = 0.25
    stretch: int = 4
    max_chain_bytes: int = 4 * 1024 * 1024
    prune: bool = True

    def __post_init__(self) -> None:
        # bool is an int subclass: interval=True would be a cadence of one step by accident.
        if type(self.interval) is not int or self.interval < 1:
            raise ValueError(f"interval must be an integer >= 1, got {self.interval!r}")
        share = self.chain_share
        if type(share) not in (int, float) or not 0 <= share <= 1:
            raise ValueError(f"chain_share must be a number from 0 to 1, got {share!r}")
        if type(self.stretch) is not int or self.stretch < 1:
            raise ValueError(f"stretch must be an integer >= 1, got {self.stretch!r}")
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
        if steps_since_snapshot is None or delta_bytes >= state_bytes:
            return "snapshot"
        chain = chain_bytes + delta_bytes
        if chain > self.max_chain_bytes:
            return "snapshot"
        if steps_since_snapshot < self.interval:
            return "delta"
        if chain >= self.chain_share * state_bytes:
            return "snapshot"
        return "snapshot" if steps_since_snapshot >= self.interval * self.stretch else "delta"
