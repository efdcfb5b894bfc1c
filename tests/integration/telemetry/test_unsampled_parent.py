"""No span is started inside a trace that is not being recorded, when the sampler is the
SDK's ParentBased (which would drop it); any other sampler is still asked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agentckpt import Store
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.spans import drops_unsampled_children


class Counting(Sampler):
    """Samples every span and counts the questions (a custom, non-ParentBased sampler)."""

    def __init__(self) -> None:
        self.asked = 0

    def should_sample(
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: Any = None,
        attributes: Any = None,
        links: Sequence[Any] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        self.asked += 1
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "Counting"


def _unsampled(remote: bool) -> NonRecordingSpan:
    """A parent span of a trace that was sampled out (as an incoming traceparent with
    flags 00, or an application span its own sampler dropped)."""
    context = SpanContext(
        trace_id=0x1234, span_id=0x5678, is_remote=remote, trace_flags=TraceFlags(0)
    )
    return NonRecordingSpan(context)


def _traced(sampler: Sampler) -> tuple[Telemetry, InMemorySpanExporter, TracerProvider]:
    spans = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return Telemetry(tracer_provider=provider, use_global=False), spans, provider


@pytest.mark.parametrize(
    ("sampler", "drops"),
    [
        (ParentBased(ALWAYS_ON), True),
        (ParentBased(TraceIdRatioBased(0.1)), True),
        # A parent sampled out still has its children sampled: ask it for each.
        (ParentBased(ALWAYS_ON, local_parent_not_sampled=ALWAYS_ON), False),
        (ParentBased(ALWAYS_ON, remote_parent_not_sampled=ALWAYS_ON), False),
        (ParentBased(ParentBased(ALWAYS_ON), local_parent_not_sampled=ALWAYS_ON), False),
        (ALWAYS_ON, False),
        (TraceIdRatioBased(0.5), False),
        (Counting(), False),
    ],
)
def test_which_samplers_drop_the_children_of_unsampled_spans(sampler: Sampler, drops: bool) -> None:
    assert drops_unsampled_children(TracerProvider(sampler=sampler)) is drops


def test_a_provider_without_a_sampler_is_asked_for_each_span() -> None:
    assert drops_unsampled_children(object()) is False
    assert drops_unsampled_children(trace.NoOpTracerProvider()) is False


@pytest.mark.parametrize("remote", [False, True])
def test_no_commit_span_is_started_under_an_unsampled_parent(sqlite_url: str, remote: bool) -> None:
    telemetry, spans, provider = _traced(ParentBased(ALWAYS_ON))
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        with trace.use_span(_unsampled(remote)):
            assert telemetry.tracing() is None
            store.commit(run.run_id, {"n": 1})
            store.latest(run.run_id)
        # With no parent the root sampler decides (ALWAYS_ON here), and with a sampled
        # parent the span is its child.
        assert telemetry.tracing() is not None
        store.commit(run.run_id, {"n": 2})
        with provider.get_tracer("app").start_as_current_span("turn") as turn:
            assert telemetry.tracing() is not None
            store.commit(run.run_id, {"n": 3})
    commits = [s for s in spans.get_finished_spans() if s.name == "agentckpt.commit"]
    assert [s.attributes["agentckpt.step"] for s in commits if s.attributes] == [2, 3]
    assert commits[1].parent is not None
    assert commits[1].parent.span_id == turn.get_span_context().span_id
    assert not [s for s in spans.get_finished_spans() if s.name == "agentckpt.latest"]
    provider.shutdown()


def test_a_custom_sampler_still_decides_under_an_unsampled_parent(sqlite_url: str) -> None:
    sampler = Counting()
    telemetry, spans, provider = _traced(sampler)
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        asked = sampler.asked
        with trace.use_span(_unsampled(False)):
            store.commit(run.run_id, {"n": 1})
    assert sampler.asked > asked
    (commit,) = [s for s in spans.get_finished_spans() if s.name == "agentckpt.commit"]
    assert commit.parent is not None
    assert commit.parent.span_id == 0x5678
    provider.shutdown()


def test_a_sampler_that_drops_everything_still_drops(sqlite_url: str) -> None:
    telemetry, spans, provider = _traced(ParentBased(ALWAYS_OFF))
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
    assert spans.get_finished_spans() == ()
    provider.shutdown()
