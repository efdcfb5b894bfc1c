"""Histogram observations reach the SDK in loops of FLUSH_EVERY, and every collection
sees every observation recorded before it, with the exemplar context of its record."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from agentckpt import Store
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.telemetry import FLUSH_EVERY
from tests.integration.telemetry.conftest import Pipeline


def _count(pipeline: Pipeline, name: str) -> int:
    return sum(point.count for point in pipeline.points(name))


def test_a_collection_sees_every_commit_and_holds_stay_bounded(
    sqlite_url: str, pipeline: Pipeline
) -> None:
    commits = FLUSH_EVERY * 3 + 5
    with Store.connect(sqlite_url, telemetry=pipeline.telemetry) as store:
        run = store.create_run()
        for n in range(commits):
            store.commit(run.run_id, {"n": n})
            # Never more than FLUSH_EVERY observations wait for the SDK.
            assert len(pipeline.telemetry._held) < FLUSH_EVERY
        # Read while the store is open: the collection itself hands the rest over.
        assert pipeline.telemetry._held
        assert _count(pipeline, "agentckpt.commit.duration") == commits
        assert not pipeline.telemetry._held
        store.commit(run.run_id, {"n": commits})
        assert _count(pipeline, "agentckpt.commit.duration") == commits + 1


def test_closing_the_store_hands_its_observations_over(sqlite_url: str) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(meter_provider=meters, use_global=False)
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        assert telemetry._held
    assert not telemetry._held
    meters.shutdown()


def test_a_held_observation_keeps_the_context_it_was_recorded_in(sqlite_url: str) -> None:
    # Metrics only, the application tracing with its own provider: the exemplar of a
    # commit made inside the application's span points at that span, though the SDK
    # gets the observation after the span ended.
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(meter_provider=meters, use_global=False)
    application = TracerProvider()
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        with application.get_tracer("app").start_as_current_span("turn") as turn:
            store.commit(run.run_id, {"n": 1})
        assert telemetry._held
        data = reader.get_metrics_data()
    assert data is not None
    (point,) = [
        p
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "agentckpt.commit.duration"
        for p in m.data.data_points
    ]
    assert [e.span_id for e in point.exemplars] == [turn.get_span_context().span_id]
    meters.shutdown()
    application.shutdown()
