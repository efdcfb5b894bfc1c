"""Spans and metric points of real commits, resumes and conflicts, on both backends."""

from __future__ import annotations

import logging
import uuid

import pytest
from opentelemetry.trace import StatusCode

from agentckpt import AsyncStore, Store
from agentckpt._backends.factory import parse_url
from agentckpt.errors import FencedError, StaleHeadError, StepConflictError
from agentckpt.runs.effects import Effects
from agentckpt.runs.leases import Heartbeat, Leases
from agentckpt.telemetry import Telemetry
from tests.integration.telemetry.conftest import Pipeline
from tests.support.dbsql import run_sql


def system(url: str) -> str:
    return "sqlite" if parse_url(url).dialect == "sqlite" else "postgresql"


def test_a_commit_has_a_span_with_database_attributes_and_metric_points(
    url: str, pipeline: Pipeline
) -> None:
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = store.create_run(agent_id="planner")
        history = [f"message {n}: " + "lorem ipsum " * 20 for n in range(30)]
        store.commit(run.run_id, {"messages": history})
        store.commit(run.run_id, {"messages": [*history, "world"]})

    commits = pipeline.finished("agentckpt.commit")
    assert len(commits) == 2
    first, second = commits
    assert first.attributes is not None
    assert second.attributes is not None
    assert first.attributes["db.system"] == system(url)
    assert first.attributes["db.operation.name"] == "commit"
    assert first.attributes["agentckpt.run_id"] == str(run.run_id)
    assert first.attributes["agentckpt.step"] == 1
    assert first.attributes["agentckpt.step.kind"] == "snapshot"
    assert second.attributes["agentckpt.step.kind"] == "delta"
    assert int(first.attributes["agentckpt.bytes_written"]) > 0
    assert "agentckpt.outcome" not in first.attributes  # success: the UNSET status
    assert first.status.status_code is StatusCode.UNSET
    # A lone commit is its own round trip: no batch span of one write.
    assert pipeline.finished("agentckpt.commit_batch") == []

    durations = pipeline.points("agentckpt.commit.duration")
    assert [(p.attributes["db.system"], p.attributes["outcome"]) for p in durations] == [
        (system(url), "ok")
    ]
    assert durations[0].count == 2
    written = {
        p.attributes["step.kind"]: p.value for p in pipeline.points("agentckpt.commit.written")
    }
    assert set(written) == {"snapshot", "delta"}
    assert written["snapshot"] > 0
    assert written["delta"] > 0
    sizes = pipeline.points("agentckpt.commit.batch_size")
    assert sizes[0].count == 2
    assert sizes[0].sum == 2


def test_a_conflict_sets_the_error_status_and_counts_by_type(url: str, pipeline: Pipeline) -> None:
    with Store.connect(url, telemetry=pipeline.telemetry) as store, Store.connect(url) as other:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        other.commit(run.run_id, {"n": 2})
        with pytest.raises(StaleHeadError):
            store.commit(run.run_id, {"n": 3}, expected_head=1)
        with pytest.raises(StepConflictError):
            store.commit(run.run_id, {"n": 99}, step=2)

    failed = [
        s for s in pipeline.finished("agentckpt.commit") if s.status.status_code is StatusCode.ERROR
    ]
    assert [s.attributes["error.type"] for s in failed if s.attributes] == [
        "StaleHeadError",
        "StepConflictError",
    ]
    assert [e.name for e in failed[0].events] == ["exception"]
    assert failed[0].events[0].attributes is not None
    assert failed[0].events[0].attributes["exception.type"].endswith("StaleHeadError")
    conflicts = {p.attributes["type"]: p.value for p in pipeline.points("agentckpt.conflicts")}
    assert conflicts == {"stale_head": 1, "step_conflict": 1}
    outcomes = {
        p.attributes["outcome"]: p.count for p in pipeline.points("agentckpt.commit.duration")
    }
    assert outcomes == {"ok": 1, "stale_head": 1, "step_conflict": 1}


def test_resume_has_a_span_and_a_latency_point(url: str, pipeline: Pipeline) -> None:
    with Store.connect(url) as writer:
        run = writer.create_run()
        for n in range(5):
            writer.commit(run.run_id, {"n": n})
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        checkpoint = store.resume(run.run_id)
        assert checkpoint is not None
        assert checkpoint.state == {"n": 4}
        store.latest(run.run_id)
        with pytest.raises(LookupError):
            store.resume(uuid.uuid4())

    resumes = pipeline.finished("agentckpt.resume")
    assert len(resumes) == 2
    assert resumes[0].attributes is not None
    assert resumes[0].attributes["agentckpt.run_id"] == str(run.run_id)
    assert resumes[0].attributes["db.system"] == system(url)
    assert resumes[1].status.status_code is StatusCode.ERROR
    assert len(pipeline.finished("agentckpt.latest")) == 1
    latency = {
        p.attributes["outcome"]: p.count for p in pipeline.points("agentckpt.resume.duration")
    }
    assert latency == {"ok": 2, "error": 1}


async def test_the_async_store_records_the_same(url: str, pipeline: Pipeline) -> None:
    async with await AsyncStore.connect(url, telemetry=pipeline.telemetry) as store:
        run = await store.create_run()
        await store.commit(run.run_id, {"a": 1})
        await store.resume(run.run_id)
        ref = await store.put_blob(run.run_id, b"x" * 5000)
        assert await store.get_blob(run.run_id, ref) == b"x" * 5000
    for name in (
        "agentckpt.commit",
        "agentckpt.resume",
        "agentckpt.blob.put",
        "agentckpt.blob.get",
    ):
        assert len(pipeline.finished(name)) == 1, name
    assert pipeline.points("agentckpt.commit.duration")[0].count == 1


def test_fencing_leases_and_effects(
    url: str, pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentckpt")
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = store.create_run(agent_id="worker")
        leases = Leases(store)
        lease = leases.acquire(run.run_id, "me", 30)
        store.commit(run.run_id, {"n": 1}, epoch=lease.epoch)
        effects = Effects(store)
        assert effects.perform(run.run_id, 1, "email", lambda key: {"sent": key}) is not None
        assert effects.perform(run.run_id, 1, "email", lambda key: {"again": True}) != {
            "again": True
        }
        # Another worker takes the run over: the old lease is fenced out.
        run_sql(
            url,
            "UPDATE runs SET lease_owner = 'thief', lease_epoch = 9 WHERE run_id = ?",
            str(run.run_id),
        )
        with pytest.raises(FencedError):
            store.commit(run.run_id, {"n": 2}, epoch=lease.epoch)
        assert Heartbeat(leases, run.run_id, lease).beat() is False

    assert len(pipeline.finished("agentckpt.lease.acquire")) == 1
    renew = pipeline.finished("agentckpt.lease.renew")
    assert renew[0].attributes is not None
    assert renew[0].attributes["agentckpt.lease.lost"] is True
    assert len(pipeline.finished("agentckpt.lease.lose")) == 1
    assert len(pipeline.finished("agentckpt.effect.run")) == 1
    assert len(pipeline.finished("agentckpt.effect.replay")) == 1
    assert [p.value for p in pipeline.points("agentckpt.effect.replays")] == [1]
    assert [p.value for p in pipeline.points("agentckpt.leases.lost")] == [1]
    conflicts = {p.attributes["type"]: p.value for p in pipeline.points("agentckpt.conflicts")}
    assert conflicts == {"fenced": 1}
    fenced = [r for r in caplog.records if "fenced" in r.getMessage()]
    assert fenced
    assert fenced[0].name == "agentckpt.store"
    assert fenced[0].levelno == logging.WARNING
    assert str(run.run_id) in fenced[0].getMessage()
    lost = [r for r in caplog.records if "taken over" in r.getMessage()]
    assert lost
    assert lost[0].name == "agentckpt.runs"


def test_a_slow_commit_is_logged_with_run_and_step_but_no_content(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentckpt.store")
    with Store.connect(url, telemetry=Telemetry(slow_commit=0.0, use_global=False)) as store:
        run = store.create_run()
        store.commit(run.run_id, {"secret": "do-not-log-me"})
    slow = [r for r in caplog.records if "slow commit" in r.getMessage()]
    assert len(slow) == 1
    message = slow[0].getMessage()
    assert str(run.run_id) in message
    assert "step 1" in message
    assert "do-not-log-me" not in message


def test_migrations_have_a_span(blank_url: str, pipeline: Pipeline) -> None:
    with Store.connect(blank_url, telemetry=pipeline.telemetry):
        pass
    (migrate,) = pipeline.finished("agentckpt.migrate")
    assert migrate.attributes is not None
    assert int(migrate.attributes["agentckpt.migrations_applied"]) > 0


def test_without_a_provider_nothing_is_recorded_and_the_span_is_shared() -> None:
    telemetry = Telemetry(use_global=False)
    assert telemetry.tracer() is None
    assert telemetry.metering is False
    assert telemetry.span("agentckpt.commit", {}) is telemetry.span("agentckpt.latest", {})


async def test_a_group_commit_batch_has_its_own_span(sqlite_url: str, pipeline: Pipeline) -> None:
    import asyncio

    async with await AsyncStore.connect(sqlite_url, telemetry=pipeline.telemetry) as store:
        runs = [(await store.create_run()).run_id for _ in range(8)]
        for n in range(3):
            await asyncio.gather(*(store.commit(r, {"n": n}) for r in runs))
    batches = pipeline.finished("agentckpt.commit_batch")
    assert batches, "concurrent commits on SQLite (one sender) form batches"
    sizes = [int(b.attributes["db.operation.batch.size"]) for b in batches if b.attributes]
    assert all(size > 1 for size in sizes)
    points = pipeline.points("agentckpt.commit.batch_size")
    assert points[0].sum == 24
