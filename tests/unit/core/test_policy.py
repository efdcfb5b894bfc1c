"""SnapshotPolicy refuses settings of the wrong type or range when it is made, with the
field and the value, instead of a TypeError at the first commit (or a silent cadence)."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import SnapshotPolicy
from agentckpt._core.policy import DEFAULT_POLICY

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "interval 0": ({"interval": 0}, "interval"),
    "interval True": ({"interval": True}, "interval"),
    "interval 1.5": ({"interval": 1.5}, "interval"),
    "interval str": ({"interval": "20"}, "interval"),
    "max_chain_bytes negative": ({"max_chain_bytes": -1}, "max_chain_bytes"),
    "max_chain_bytes str": ({"max_chain_bytes": "5"}, "max_chain_bytes"),
    "max_chain_bytes float": ({"max_chain_bytes": 1e6}, "max_chain_bytes"),
    "prune None": ({"prune": None}, "prune"),
    "prune str": ({"prune": "no"}, "prune"),
    "chain_share negative": ({"chain_share": -0.1}, "chain_share"),
    "chain_share above 1": ({"chain_share": 1.5}, "chain_share"),
    "chain_share nan": ({"chain_share": float("nan")}, "chain_share"),
    "chain_share True": ({"chain_share": True}, "chain_share"),
    "max_interval below interval": ({"max_interval": 19}, "max_interval"),
    "max_interval float": ({"max_interval": 40.0}, "max_interval"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_setting_is_refused_naming_it(case: str) -> None:
    settings, field = BAD[case]
    with pytest.raises(ValueError, match=rf"^{field} must be .*, got {settings[field]!r}"):
        SnapshotPolicy(**settings)


def test_good_settings_are_kept() -> None:
    policy = SnapshotPolicy(interval=1, max_chain_bytes=0, prune=False)
    assert (policy.interval, policy.max_chain_bytes, policy.prune) == (1, 0, False)
    assert SnapshotPolicy() == SnapshotPolicy(interval=20, max_chain_bytes=4 * 1024 * 1024)


def kinds(policy: SnapshotPolicy, *, state: int, delta: int, steps: int) -> list[int]:
    """The steps that are snapshots, for a run of ``steps`` deltas of ``delta`` bytes on a
    state of ``state`` bytes (step 0 the first snapshot)."""
    snapshots, since, chain = [0], 0, 0
    for step in range(1, steps + 1):
        since += 1
        kind = policy.choose(
            steps_since_snapshot=since, chain_bytes=chain, delta_bytes=delta, state_bytes=state
        )
        if kind == "snapshot":
            snapshots.append(step)
            since, chain = 0, 0
        else:
            chain += delta
    return snapshots


def test_a_state_whose_steps_change_much_snapshots_every_interval() -> None:
    # 20 deltas of 600 B add up to more than half of a 12 KB state: the cadence of old.
    assert kinds(DEFAULT_POLICY, state=12_000, delta=600, steps=100) == [0, 20, 40, 60, 80, 100]


def test_a_large_state_changed_little_snapshots_once_its_chain_holds_a_share() -> None:
    # 1 KB deltas on a 100 KB state: a snapshot once the chain reaches 50 KB ...
    assert kinds(DEFAULT_POLICY, state=100_000, delta=1000, steps=120)[:2] == [0, 50]
    # ... and never more than max_interval (default 3 x interval) steps apart.
    assert kinds(DEFAULT_POLICY, state=1_000_000, delta=10, steps=130) == [0, 60, 120]
    capped = SnapshotPolicy(interval=10, max_interval=25, chain_share=0.5)
    assert kinds(capped, state=1_000_000, delta=10, steps=60) == [0, 25, 50]


def test_chain_share_zero_keeps_the_exact_interval() -> None:
    exact = SnapshotPolicy(interval=20)
    assert kinds(exact, state=1_000_000, delta=10, steps=60) == [0, 20, 40, 60]
    assert (
        SnapshotPolicy(interval=1, chain_share=0).choose(
            steps_since_snapshot=1, chain_bytes=0, delta_bytes=1, state_bytes=10**6
        )
        == "snapshot"
    )


def test_the_chain_byte_bound_still_forces_a_snapshot_before_the_interval() -> None:
    policy = SnapshotPolicy(max_chain_bytes=5_000, chain_share=0.5)
    assert kinds(policy, state=10**6, delta=1_000, steps=12) == [0, 6, 12]


def test_a_store_opened_without_a_policy_uses_the_default(tmp_path: Any) -> None:
    from agentckpt import Store

    with Store.connect(f"sqlite:///{tmp_path}/s.db") as store:
        assert store.policy == DEFAULT_POLICY
        assert store.policy.chain_share == 0.5
