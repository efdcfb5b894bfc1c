"""When a step is stored whole (a snapshot) and when as a delta against its parent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["snapshot", "delta"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotPolicy:
    """Snapshot cadence and pruning.

    A step is a snapshot when the run has none yet; when ``interval`` steps have passed
    since the last one and the deltas since then add up to at least ``chain_share`` of
    the state's size; when ``max_interval`` steps have passed (default: three times
    ``interval``), whatever their size; when the deltas since it would pass
    ``max_chain_bytes``; or when the delta would not be smaller than the state itself.
    Resume reads the newest snapshot plus the deltas after it, so these bounds also
    bound resume cost: at most ``max_interval`` deltas, and past ``interval`` only
    while they hold less than ``chain_share`` of the state's bytes.

    Why the share: a snapshot copies the whole state, so one every ``interval`` steps
    costs each step a share of the state's size, however little the steps change. A
    large state whose steps change a few small members is copied less often (up to
    ``max_interval``), and a snapshot's cost spread over its steps follows the bytes
    they changed. ``chain_share=0`` (a policy's default) snapshots every ``interval``
    steps exactly; a store opened without a policy uses :data:`DEFAULT_POLICY`, whose
    share is 0.5.

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
    chain_share: float = 0.0
    max_interval: int | None = None

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
        share = self.chain_share
        if type(share) not in (int, float) or not 0 <= share <= 1:
            raise ValueError(f"chain_share must be a number from 0 to 1, got {share!r}")
        cap = self.max_interval
        if cap is not None and (type(cap) is not int or cap < self.interval):
            raise ValueError(
                f"max_interval must be an integer >= interval ({self.interval}), got {cap!r}"
            )

    @property
    def longest_interval(self) -> int:
        """The most steps between two snapshots (``max_interval``, or 3 x ``interval``)."""
        return 3 * self.interval if self.max_interval is None else self.max_interval

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
        if steps_since_snapshot is None:
            return "snapshot"
        chain = chain_bytes + delta_bytes
        if steps_since_snapshot >= self.interval and (
            chain >= self.chain_share * state_bytes or steps_since_snapshot >= self.longest_interval
        ):
            return "snapshot"
        if chain > self.max_chain_bytes:
            return "snapshot"
        if delta_bytes >= state_bytes:
            return "snapshot"
        return "delta"


DEFAULT_POLICY = SnapshotPolicy(chain_share=0.5)
"""The policy of a store opened without one: a snapshot every 20 steps, later (up to
60) while the deltas since the last one hold less than half the state's bytes, and
pruning."""
