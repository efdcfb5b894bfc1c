"""Orphan claims, retries and the recovery worker's retention schedule, observed."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.errors import UnavailableError
from agentckpt.ops.retention import RetentionPolicy
from agentckpt.runs.leases import Leases
from agentckpt.runs.recovery import RecoveryWorker
from agentckpt.store.ride_out import ride_out
from tests.integration.runs.test_leases import expire_lease
from tests.integration.telemetry.conftest import Pipeline
from tests.integration.telemetry.test_retention import age


def test_an_orphan_claim_is_counted_and_logged(
    url: str, pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentckpt.runs")
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = store.create_run(agent_id="worker")
        Leases(store).acquire(run.run_id, "dead-worker", 30)
        expire_lease(url, run.run_id)
        worker = RecoveryWorker(store, owner="rescuer")
        resumed: list[uuid.UUID] = []

        def factory(agent_run: Any) -> str:
            resumed.append(agent_run.run_id)
            return "resumed"

        worker.register("worker", factory)
        done = worker.recover_once(limit=1)
    assert [r.run_id for r in done] == [run.run_id]
    assert resumed == [run.run_id]
    assert [p.value for p in pipeline.points("agentckpt.orphans.claimed")] == [1]
    claims = [r for r in caplog.records if "orphan claimed" in r.getMessage()]
    assert len(claims) == 1
    assert claims[0].name == "agentckpt.runs"
    assert str(run.run_id) in claims[0].getMessage()


def test_an_outage_retry_is_counted_and_its_commit_span_says_which_retry(
    url: str, pipeline: Pipeline
) -> None:
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = store.create_run()
        failures = iter([UnavailableError("the database is restarting")])

        def call() -> Any:
            failure = next(failures, None)
            if failure is not None:
                raise failure
            return store.commit(run.run_id, {"n": 1})

        info = ride_out(store.outage, call, what=f"run {run.run_id}")
    assert info.step == 1
    (commit,) = pipeline.finished("agentckpt.commit")
    assert commit.attributes is not None
    assert commit.attributes["agentckpt.retry_count"] == 1
    retries = {p.attributes["error.type"]: p.value for p in pipeline.points("agentckpt.retries")}
    assert retries == {"UnavailableError": 1}


def test_the_recovery_worker_applies_retention_when_due(url: str) -> None:
    with Store.connect(url) as store:
        old = store.create_run(agent_id="a")
        store.set_status(old.run_id, "completed")
        age(url, old.run_id, 10)
        worker = RecoveryWorker(
            store, retention=RetentionPolicy(ended_days=1), retention_every=3600
        )
        first = worker.apply_retention_if_due()
        assert first is not None
        assert first.total_runs == 1
        # Not due again for an hour.
        assert worker.apply_retention_if_due() is None
        with pytest.raises(LookupError):
            store.get_run(old.run_id)
        polls = iter([False, True])
        worker.run_forever(poll_interval=0.01, stop=lambda: next(polls, True))


def test_a_step_retry_is_counted_and_its_commit_span_says_which_retry(
    url: str, pipeline: Pipeline
) -> None:
    from agentckpt.runs import AgentRun, RetryPolicy, TransientError

    def step(ctx: Any) -> Any:
        if ctx.step == 2 and ctx.attempt < 3:
            raise TransientError("rate limited")
        return {"n": ctx.step}

    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = AgentRun(
            store,
            initial_state={"n": 0},
            retry=RetryPolicy(max_attempts=4, initial_delay=0.0, jitter=0.0),
            sleep=lambda delay: None,
        )
        run.run(step, max_steps=3)
    commits = {
        int(s.attributes["agentckpt.step"]): s.attributes.get("agentckpt.retry_count")
        for s in pipeline.finished("agentckpt.commit")
        if s.attributes
    }
    # Step 0 (the initial state) and 1 and 3 on their first attempt; step 2 on its third.
    assert commits == {0: None, 1: None, 2: 2, 3: None}
    retries = {
        p.attributes["error.type"]: p.value for p in pipeline.points("agentckpt.step_retries")
    }
    assert retries == {"TransientError": 2}
    # Outage retries are another metric.
    assert pipeline.points("agentckpt.retries") == []
