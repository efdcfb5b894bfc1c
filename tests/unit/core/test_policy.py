"""SnapshotPolicy refuses settings of the wrong type or range when it is made, with the
field and the value, instead of a TypeError at the first commit (or a silent cadence);
and its cadence: every ``interval`` steps, stretched up to ``stretch`` times for a state
whose deltas since the snapshot hold less than ``chain_share`` of it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentckpt import SnapshotPolicy

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "interval 0": ({"interval": 0}, "interval"),
    "interval True": ({"interval": True}, "interval"),
    "interval 1.5": ({"interval": 1.5}, "interval"),
    "interval str": ({"interval": "20"}, "interval"),
    "chain_share negative": ({"chain_share": -0.1}, "chain_share"),
    "chain_share above 1": ({"chain_share": 1.5}, "chain_share"),
    "chain_share NaN": ({"chain_share": float("nan")}, "chain_share"),
    "chain_share str": ({"chain_share": "0.5"}, "chain_share"),
    "chain_share True": ({"chain_share": True}, "chain_share"),
    "stretch 0": ({"stretch": 0}, "stretch"),
    "stretch 2.0": ({"stretch": 2.0}, "stretch"),
    "stretch True": ({"stretch": True}, "stretch"),
    "max_chain_bytes negative": ({"max_chain_bytes": -1}, "max_chain_bytes"),
    "max_chain_bytes str": ({"max_chain_bytes": "5"}, "max_chain_bytes"),
    "max_chain_bytes float": ({"max_chain_bytes": 1e6}, "max_chain_bytes"),
    "prune None": ({"prune": None}, "prune"),
    "prune str": ({"prune": "no"}, "prune"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_setting_is_refused_naming_it(case: str) -> None:
    settings, field = BAD[case]
    got = re.escape(repr(settings[field]))
    with pytest.raises(ValueError, match=rf"^{field} must be .*, got {got}$"):
        SnapshotPolicy(**settings)


def test_good_settings_are_kept() -> None:
    policy = SnapshotPolicy(interval=1, chain_share=0, stretch=1, max_chain_bytes=0, prune=False)
    assert (policy.interval, policy.chain_share, policy.stretch) == (1, 0, 1)
    assert (policy.max_chain_bytes, policy.prune) == (0, False)
    assert SnapshotPolicy() == SnapshotPolicy(
        interval=20, chain_share=0.25, stretch=4, max_chain_bytes=4 * 1024 * 1024
    )


def _cadence(policy: SnapshotPolicy, *, state: int, delta: int, steps: int) -> list[int]:
    """The steps that are snapshots when every step's delta is ``delta`` bytes of a
    ``state``-byte state (step 0 is the first snapshot)."""
    snapshots, last, chain = [0], 0, 0
    for step in range(1, steps):
        kind = policy.choose(
            steps_since_snapshot=step - last,
            chain_bytes=chain,
            delta_bytes=delta,
            state_bytes=state,
        )
        if kind == "snapshot":
            snapshots.append(step)
            last, chain = step, 0
        else:
            chain += delta
    return snapshots


def test_a_state_whose_deltas_add_up_fast_is_a_snapshot_every_interval() -> None:
    # 1 KB deltas of a 10 KB state: 20 of them are twice the state, past its quarter.
    assert _cadence(SnapshotPolicy(), state=10_000, delta=1_000, steps=61) == [0, 20, 40, 60]


def test_a_large_state_changed_a_little_waits_for_its_share() -> None:
    # 1 KB deltas of a 100 KB state: a quarter of it is 25 deltas, so step 25, 50, ...
    assert _cadence(SnapshotPolicy(), state=100_000, delta=1_000, steps=101) == [0, 25, 50, 75, 100]


def test_stretch_bounds_the_wait_whatever_the_sizes() -> None:
    # 100 B deltas of a 1 MB state would take 2,500 steps to reach the share.
    assert _cadence(SnapshotPolicy(), state=1_000_000, delta=100, steps=241) == [0, 80, 160, 240]
    stretched = SnapshotPolicy(interval=10, stretch=3)
    assert _cadence(stretched, state=1_000_000, delta=100, steps=61) == [0, 30, 60]


@pytest.mark.parametrize("policy", [SnapshotPolicy(chain_share=0), SnapshotPolicy(stretch=1)])
def test_no_share_or_no_stretch_is_a_snapshot_every_interval(policy: SnapshotPolicy) -> None:
    assert _cadence(policy, state=1_000_000, delta=100, steps=41) == [0, 20, 40]


def test_interval_one_with_no_share_is_a_snapshot_every_step() -> None:
    every = SnapshotPolicy(interval=1, chain_share=0)
    assert _cadence(every, state=1_000_000, delta=100, steps=5) == [0, 1, 2, 3, 4]


def test_the_chain_budget_and_a_delta_as_large_as_the_state_still_snapshot_early() -> None:
    budget = SnapshotPolicy(max_chain_bytes=2_500)
    assert _cadence(budget, state=100_000, delta=1_000, steps=7) == [0, 3, 6]
    assert _cadence(SnapshotPolicy(), state=1_000, delta=1_000, steps=3) == [0, 1, 2]
