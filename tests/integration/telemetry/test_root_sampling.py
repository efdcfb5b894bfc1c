"""A root span's sampling decided before it is started: the traces kept are exactly the
ones the SDK's TraceIdRatioBased keeps, their ids drawn from the provider's generator,
and a dropped root costs no span."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

from agentckpt import Store
from agentckpt.errors import StaleHeadError
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.spans import drops_unsampled_children, root_sampling

LIMIT = (1 << 64) - 1


class Listed(IdGenerator):
    """Hands out the trace ids given, in order, and counts them."""

    def __init__(self, trace_ids: list[int]) -> None:
        self._trace_ids: Iterator[int] = iter(trace_ids)
        self.drawn = 0
        self._span_ids = RandomIdGenerator()

    def generate_trace_id(self) -> int:
        self.drawn += 1
        return next(self._trace_ids)

    def generate_span_id(self) -> int:
        return self._span_ids.generate_span_id()


def _pipeline(
    sampler: Sampler, ids: IdGenerator | None = None
) -> tuple[Telemetry, InMemorySpanExporter, TracerProvider]:
    spans = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler, id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return Telemetry(tracer_provider=provider, use_global=False), spans, provider


def _commits(telemetry: Telemetry, count: int) -> None:
    run_id = uuid.uuid4()
    for step in range(count):
        with telemetry.commit("sqlite", run_id, None) as probe:
            probe.done(step, "delta", 100)


@pytest.mark.parametrize("wrap", [ParentBased, ParentBasedTraceIdRatio, None])
def test_the_traces_kept_are_the_ones_whose_ids_the_ratio_sampler_keeps(
    wrap: type[ParentBased] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = TraceIdRatioBased(0.5)
    if wrap is ParentBasedTraceIdRatio:
        sampler: Sampler = ParentBasedTraceIdRatio(0.5)
        root = sampler._root  # type: ignore[attr-defined]
    else:
        sampler = root if wrap is None else ParentBased(root)
    asked: list[int] = []
    decide = root.should_sample

    def counted(*args: Any, **kwargs: Any) -> Any:
        # ParentBased passes its arguments by keyword, the tracer by position.
        asked.append(kwargs["trace_id"] if "trace_id" in kwargs else args[1])
        return decide(*args, **kwargs)

    monkeypatch.setattr(root, "should_sample", counted)
    bound = TraceIdRatioBased.get_bound_for_rate(0.5)
    # Low 64 bits under the bound (kept) and over it (dropped), high bits set as well.
    trace_ids = [(n + 1) << 64 | (bound - 1 - n if n % 3 else bound + n) for n in range(30)]
    ids = Listed(trace_ids)
    telemetry, spans, provider = _pipeline(sampler, ids)
    _commits(telemetry, 30)
    kept = [s.context.trace_id for s in spans.get_finished_spans() if s.context is not None]
    assert kept == [t for t in trace_ids if t & LIMIT < bound]
    assert len(kept) == 20
    # One id drawn per root span, as the SDK draws one: none drawn twice or skipped; the
    # SDK was asked only for the roots kept (a dropped one started no span).
    assert ids.drawn == 30
    assert asked == kept
    for span in spans.get_finished_spans():
        assert span.context is not None
        assert span.context.trace_flags.sampled
        assert span.parent is None
        assert span.attributes is not None
        assert span.attributes["agentckpt.bytes_written"] == 100
    provider.shutdown()


def test_a_tenth_of_random_roots_are_kept_each_one_under_the_bound() -> None:
    telemetry, spans, provider = _pipeline(ParentBased(TraceIdRatioBased(0.1)))
    _commits(telemetry, 4000)
    kept = spans.get_finished_spans()
    # Binomial(4000, 0.1): mean 400, standard deviation 19; these bounds are 8 of them.
    assert 250 < len(kept) < 550
    bound = TraceIdRatioBased.get_bound_for_rate(0.1)
    assert all(s.context is not None and s.context.trace_id & LIMIT < bound for s in kept)
    assert len({s.context.trace_id for s in kept if s.context is not None}) == len(kept)
    provider.shutdown()


@pytest.mark.parametrize(
    ("sampler", "decided_ahead"),
    [
        (ParentBased(TraceIdRatioBased(0.1)), True),
        (ParentBasedTraceIdRatio(0.1), True),
        (TraceIdRatioBased(0.1), True),
        (ParentBased(ALWAYS_OFF), True),
        (ALWAYS_OFF, True),
        # Always on: nothing to save. A root sampler that is not the SDK's ratio sampler
        # may look at more than the id: it is asked for each span.
        (ParentBased(ALWAYS_ON), False),
        (ParentBased(TraceIdRatioBased(1.0)), False),
        (ALWAYS_ON, False),
        (ParentBased(ParentBased(TraceIdRatioBased(0.1))), False),
    ],
)
def test_which_samplers_are_decided_ahead(sampler: Sampler, decided_ahead: bool) -> None:
    tracer = TracerProvider(sampler=sampler).get_tracer("t")
    assert (root_sampling(tracer) is not None) is decided_ahead


def test_the_environment_variables_parent_based_ratio_sampler_prunes_children() -> None:
    assert drops_unsampled_children(TracerProvider(sampler=ParentBasedTraceIdRatio(0.2)))


def test_an_always_off_root_starts_no_span(sqlite_url: str) -> None:
    ids = Listed([n + 1 for n in range(100)])
    telemetry, spans, provider = _pipeline(ParentBased(ALWAYS_OFF), ids)
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        store.latest(run.run_id)
    assert spans.get_finished_spans() == ()
    assert ids.drawn > 0  # the draw happened (and said drop), no span was built
    provider.shutdown()


def test_a_kept_root_commit_that_conflicts_has_its_error_status(sqlite_url: str) -> None:
    # Every id but the largest kept, through the path that starts the span with the
    # drawn id.
    telemetry, spans, provider = _pipeline(ParentBased(TraceIdRatioBased(1.0 - 2**-40)))
    with Store.connect(sqlite_url, telemetry=telemetry) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        with pytest.raises(StaleHeadError):
            store.commit(run.run_id, {"n": 2}, expected_head=5)
    commits = [s for s in spans.get_finished_spans() if s.name == "agentckpt.commit"]
    assert len(commits) == 2
    assert commits[0].status.status_code is trace.StatusCode.UNSET
    assert commits[1].status.status_code is trace.StatusCode.ERROR
    assert commits[1].attributes is not None
    assert commits[1].attributes["agentckpt.outcome"] == "stale_head"
    assert [e.name for e in commits[1].events] == ["exception"]
    provider.shutdown()


def test_a_span_inside_a_sampled_application_span_is_its_child() -> None:
    telemetry, spans, provider = _pipeline(ParentBased(TraceIdRatioBased(1.0 - 2**-40)))
    with provider.get_tracer("app").start_as_current_span("turn") as turn:
        _commits(telemetry, 1)
    (commit,) = [s for s in spans.get_finished_spans() if s.name == "agentckpt.commit"]
    assert commit.parent is not None
    assert commit.parent.span_id == turn.get_span_context().span_id
    assert commit.context is not None
    assert commit.context.trace_id == turn.get_span_context().trace_id
    provider.shutdown()
