"""The outage policy, its ride-out loop, and the acknowledged-step memory (pure)."""

from __future__ import annotations

import logging
import uuid

import pytest

from agentckpt import AcknowledgedStepsLostError, ConfigurationError, StaleHeadError
from agentckpt._backends.options import resolve_options
from agentckpt.errors import OutcomeUnknownError, UnavailableError
from agentckpt.store import ride_out as ride_out_module
from agentckpt.store.acknowledged import Acknowledged, Counters
from agentckpt.store.outage_policy import OutagePolicy
from agentckpt.store.ride_out import ride_out


def test_the_policy_allows_retries_for_its_limit_and_paces_them() -> None:
    policy = OutagePolicy(limit=10.0, initial_delay=0.1, max_delay=1.0, jitter=0.0)
    assert policy.allows(100.0, 109.9)
    assert not policy.allows(100.0, 110.0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert not OutagePolicy(limit=0).allows(5.0, 5.0)
    spread = OutagePolicy(jitter=0.5)
    assert spread.delay(1, rng=lambda: 0.0) == pytest.approx(0.05)
    assert spread.delay(1, rng=lambda: 0.999999) == pytest.approx(0.15, rel=1e-4)
    with pytest.raises(ConfigurationError, match="max_delay"):
        OutagePolicy(initial_delay=2.0, max_delay=1.0)


def test_ride_out_retries_outage_errors_until_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(ride_out_module._compat, "sleep", slept.append)
    now = [0.0]
    failures = [UnavailableError("down"), OutcomeUnknownError("cut")]

    def flaky() -> str:
        now[0] += 1.0
        if failures:
            raise failures.pop(0)
        return "landed"

    policy = OutagePolicy(limit=5.0, jitter=0.0)
    assert ride_out(policy, flaky, what="t", clock=lambda: now[0]) == "landed"
    assert slept == [0.1, 0.2]

    def always_down() -> None:
        now[0] += 1.0
        raise UnavailableError("still down")

    with pytest.raises(UnavailableError, match="still down"):
        ride_out(policy, always_down, what="t", clock=lambda: now[0])

    def conflict() -> None:
        raise StaleHeadError("not an outage")

    calls_before = len(slept)
    with pytest.raises(StaleHeadError):
        ride_out(policy, conflict, what="t", clock=lambda: now[0])
    assert len(slept) == calls_before  # a conflict is never retried


def test_a_head_below_an_acknowledged_step_raises_once_logs_and_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counters = Counters()
    seen: list[tuple[str, int]] = []
    counters.subscribe(lambda name, amount, attributes: seen.append((name, amount)))
    acked = Acknowledged(counters, size=2)
    run = uuid.uuid4()
    acked.record(run, 7)
    acked.record(run, 5)  # an older step again (an idempotent retry) keeps the highest
    acked.check(run, 7)
    acked.check(run, 9)
    with (
        caplog.at_level(logging.ERROR, logger="agentckpt.store"),
        pytest.raises(AcknowledgedStepsLostError) as raised,
    ):
        acked.check(run, 3)
    assert isinstance(raised.value, StaleHeadError)
    assert (raised.value.acknowledged_step, raised.value.head_step) == (7, 3)
    assert f"run {run}: the head is step 3 but this store acknowledged step 7" in caplog.text
    assert counters.snapshot() == {"acknowledged_steps_lost": 1, "lost_steps": 4}
    assert seen == [("acknowledged_steps_lost", 1), ("lost_steps", 4)]
    acked.check(run, 3)  # once: then the database's head is accepted

    acked.record(run, 7)
    with pytest.raises(AcknowledgedStepsLostError, match="8 acknowledged step"):
        acked.check(run, None)  # every step gone
    # Bounded: the least recently acknowledged run is forgotten first.
    first, second, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for rid in (first, second, third):
        acked.record(rid, 1)
    acked.check(first, None)
    with pytest.raises(AcknowledgedStepsLostError):
        acked.check(third, None)


def test_the_new_settings_are_checked() -> None:
    options, commit = resolve_options(
        "postgresql",
        {"deadline": "2.5", "reconnect_initial_delay": "0.2", "outage_limit": "0"},
        {},
    )
    assert (options.deadline, options.reconnect_initial_delay) == (2.5, 0.2)  # type: ignore[union-attr]
    assert commit.outage_limit == 0.0
    assert resolve_options("sqlite", {"outage_limit": "30"}, {})[1].outage_limit == 30.0
    with pytest.raises(ConfigurationError, match="deadline"):
        resolve_options("postgresql", {"deadline": "0"}, {})
    with pytest.raises(ConfigurationError, match="must not exceed reconnect_max_delay"):
        resolve_options("postgresql", {"reconnect_initial_delay": "5"}, {})
    with pytest.raises(ConfigurationError, match="unknown sqlite setting 'deadline'"):
        resolve_options("sqlite", {"deadline": "1"}, {})
