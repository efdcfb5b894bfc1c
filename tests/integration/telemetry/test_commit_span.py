"""The commit span's cost-saving shape: made at the end, never current, sampled or not."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from agentckpt import AsyncStore, Store
from agentckpt.telemetry import Telemetry
from tests.integration.telemetry.conftest import Pipeline


def test_the_commit_span_has_every_attribute_and_its_measured_duration(
    sqlite_url: str, pipeline: Pipeline
) -> None:
    tracer = pipeline.telemetry.tracer()
    with Store.connect(sqlite_url, telemetry=pipeline.telemetry) as store:
        run = store.create_run()
        with tracer.start_as_current_span("agent.step") as parent:
            store.commit(run.run_id, {"n": 1})
    (commit,) = pipeline.finished("agentckpt.commit")
    assert commit.attributes is not None
    assert set(commit.attributes) == {
        "db.system",
        "db.operation.name",
        "agentckpt.run_id",
        "agentckpt.step",
        "agentckpt.step.kind",
        "agentckpt.bytes_written",
    }
    # The caller's span is its parent, in the same trace.
    assert commit.parent is not None
    assert commit.parent.span_id == parent.get_span_context().span_id
    assert commit.context is not None
    assert commit.context.trace_id == parent.get_span_context().trace_id
    assert commit.start_time is not None
    assert commit.end_time is not None
    (point,) = pipeline.points("agentckpt.commit.duration")
    # The span's end is its start plus the duration the histogram got.
    assert abs((commit.end_time - commit.start_time) / 1e9 - point.sum) < 1e-6
    # The histogram's exemplar points at the commit's own span.
    assert [e.span_id for e in point.exemplars] == [commit.context.span_id]


async def test_a_batch_span_is_a_child_of_the_callers_span(
    sqlite_url: str, pipeline: Pipeline
) -> None:
    tracer = pipeline.telemetry.tracer()
    async with await AsyncStore.connect(sqlite_url, telemetry=pipeline.telemetry) as store:
        runs = [(await store.create_run()).run_id for _ in range(8)]
        with tracer.start_as_current_span("agents") as parent:
            await asyncio.gather(*(store.commit(r, {"n": 1}) for r in runs))
    batches = pipeline.finished("agentckpt.commit_batch")
    assert batches
    parent_id = parent.get_span_context().span_id
    assert all(b.parent is not None and b.parent.span_id == parent_id for b in batches)
    assert len(pipeline.finished("agentckpt.commit")) == 8


def test_unsampled_commits_record_metrics_and_no_span(sqlite_url: str) -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(
        tracer_provider=tracer_provider, meter_provider=meter_provider, use_global=False
    )
    try:
        with Store.connect(sqlite_url, telemetry=telemetry) as store:
            run = store.create_run()
            store.commit(run.run_id, {"n": 1})
            store.commit(run.run_id, {"n": 2})
        assert spans.get_finished_spans() == ()
        pipeline = Pipeline(telemetry, spans, reader)
        (point,) = pipeline.points("agentckpt.commit.duration")
        assert point.count == 2
        assert point.exemplars == []
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
