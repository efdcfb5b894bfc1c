"""The pause after a lost race for a run's head: random, bounded, growing with attempts."""

from __future__ import annotations

from agentckpt._core.contention import lost_race_pause


def test_pauses_stay_within_a_doubling_bound_up_to_the_ceiling() -> None:
    for attempt in range(1, 20):
        bound = min(0.05, 0.001 * 2**attempt)
        pauses = [lost_race_pause(attempt) for _ in range(200)]
        assert all(0 <= p <= bound for p in pauses), attempt
        # Random, not a fixed delay: two losers in lockstep are pulled apart.
        assert len(set(pauses)) > 100
    assert max(lost_race_pause(30) for _ in range(500)) > 0.04
