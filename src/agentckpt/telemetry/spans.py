"""Spans with OpenTelemetry's database attributes, and a shared no-op when tracing is off."""

from __future__ import annotations

import copy
import re
import threading
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from agentckpt.telemetry import _otel

__all__ = [
    "NOOP_SPAN",
    "RootSampling",
    "SpanLike",
    "drops_unsampled_children",
    "open_span",
    "root_sampling",
]

Attributes = dict[str, Any]


class SpanLike:
    """What a ``with telemetry.span(...) as span`` body may call on the span."""

    def set_attribute(self, key: str, value: Any) -> None:
        """Set an attribute; ignored by the no-op span."""

    def is_recording(self) -> bool:
        """False for the no-op span."""
        return False


NOOP_SPAN = SpanLike()
# nullcontext is reusable: one instance serves every call while tracing is off.
NOOP = nullcontext(NOOP_SPAN)


class _Recording:
    """A span made current for the ``with`` body, ended after it; an exception sets the
    ERROR status, ``error.type`` (the semantic conventions' attribute) and an exception
    event. A class rather than the SDK's generator-based helper: this is on the commit
    path, and two generator frames per span are measurable there."""

    __slots__ = ("_attributes", "_name", "_span", "_token", "_tracer")

    def __init__(self, tracer: Any, name: str, attributes: Attributes) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._span: Any = None
        self._token: Any = None

    def __enter__(self) -> Any:
        trace = _otel.trace
        span = self._tracer.start_span(
            self._name, kind=trace.SpanKind.CLIENT, attributes=self._attributes
        )
        self._span = span
        self._token = _otel.context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        span = self._span
        try:
            if exc is not None:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.record_exception(exc)
                span.set_status(_otel.trace.Status(_otel.trace.StatusCode.ERROR, str(exc)))
        finally:
            _otel.context.detach(self._token)
            span.end()


# The tail of the SDK ParentBased sampler's description (its own delegates come last,
# after the root sampler's description) when a parent that is not sampled, local or
# remote, makes it drop the child: its default.
_DROPS_CHILDREN = re.compile(
    r",remoteParentNotSampled:AlwaysOffSampler,localParentSampled:[^,{}]*,"
    r"localParentNotSampled:AlwaysOffSampler}$"
)


def drops_unsampled_children(provider: Any) -> bool:
    """True when ``provider`` is known to drop every span whose parent is not sampled: an
    SDK ``TracerProvider`` whose sampler is ``ParentBased`` with its default delegates
    for such parents (the SDK's own default sampler is one). Then a span started there
    is a non-recording placeholder that costs microseconds and records nothing, and
    agentckpt does not start it. Any other sampler (a custom one may sample such
    children) is asked for every span, as the API requires."""
    sampler = getattr(provider, "sampler", None)
    if sampler is None:
        return False
    try:
        from opentelemetry.sdk.trace.sampling import ParentBased, ParentBasedTraceIdRatio
    except ImportError:  # a provider with a sampler but not the SDK's: ask it each time
        return False
    # Exactly the SDK's classes (ParentBasedTraceIdRatio is what OTEL_TRACES_SAMPLER=
    # parentbased_traceidratio configures): a subclass may decide otherwise.
    if type(sampler) not in (ParentBased, ParentBasedTraceIdRatio):
        return False
    describe: Any = sampler.get_description  # untyped in the SDK
    return _DROPS_CHILDREN.search(str(describe())) is not None


class _DrawnTraceIds:
    """The provider's id generator, except that a root span gets the trace id drawn for
    it: the one :class:`_KeptRoot` put in this thread's slot just before starting it."""

    __slots__ = ("_generator", "slot")

    def __init__(self, generator: Any) -> None:
        self._generator = generator
        self.slot = threading.local()

    def generate_trace_id(self) -> int:
        trace_id: int = self.slot.trace_id
        return trace_id

    def generate_span_id(self) -> int:
        span_id: int = self._generator.generate_span_id()
        return span_id

    def is_trace_id_random(self) -> bool:
        random: bool = self._generator.is_trace_id_random()
        return random


class _KeptRoot:
    """A tracer for one root span of a trace the sampler keeps, with its drawn id."""

    __slots__ = ("_ids", "_trace_id", "_tracer")

    def __init__(self, tracer: Any, ids: _DrawnTraceIds, trace_id: int) -> None:
        self._tracer = tracer
        self._ids = ids
        self._trace_id = trace_id

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The SDK tracer's ``start_span``, the root span getting the drawn trace id."""
        # No await between this and the SDK's draw inside start_span, and the slot is
        # per thread: no other span can take this id.
        self._ids.slot.trace_id = self._trace_id
        return self._tracer.start_span(name, *args, **kwargs)


class RootSampling:
    """The sampler's decision for a root span, taken before the span is started.

    For a root span, the SDK's ``TraceIdRatioBased`` decides on the trace id alone: it
    samples when the id's low 64 bits are under its bound. This draws the trace id from
    the tracer's own id generator and tests it as the sampler will; a trace it would
    drop costs that draw and no span (the SDK would build a non-recording one, a few
    microseconds, that agentckpt never makes current: nothing observes it). A trace it
    keeps is started by a copy of the tracer whose id generator hands out the drawn id,
    so the SDK's own sampler, processors, limits and resource see exactly the span they
    would have made: the same sampling rate, and the same id-to-decision relation that
    consistent sampling downstream relies on. The SDK's self-metrics of started spans
    then do not count the dropped roots.
    """

    __slots__ = ("_bound", "_generator", "_ids", "_kept")

    def __init__(self, tracer: Any, bound: int) -> None:
        self._generator = tracer.id_generator
        self._bound = bound
        self._ids = _DrawnTraceIds(self._generator)
        # One shallow copy, made once: the provider's own tracer is left as it is.
        self._kept = copy.copy(tracer)
        self._kept.id_generator = self._ids

    def tracer(self) -> Any:
        """A tracer for one root span of a sampled trace, or None for a dropped one."""
        trace_id: int = self._generator.generate_trace_id()
        if trace_id & _TRACE_ID_LIMIT >= self._bound:
            return None
        return _KeptRoot(self._kept, self._ids, trace_id)


_TRACE_ID_LIMIT = (1 << 64) - 1  # the low 64 bits TraceIdRatioBased compares


def root_sampling(tracer: Any) -> RootSampling | None:
    """The root decision of ``tracer``'s sampler taken ahead (see :class:`RootSampling`),
    when it is known to depend on the trace id alone: an SDK ``Tracer`` whose sampler is
    ``TraceIdRatioBased``, ``ParentBased`` (or ``ParentBasedTraceIdRatio``) with such a
    root, or a root that always drops. None otherwise, and the tracer decides each span."""
    try:
        from opentelemetry.sdk.trace import Tracer
        from opentelemetry.sdk.trace.sampling import (
            Decision,
            ParentBased,
            ParentBasedTraceIdRatio,
            StaticSampler,
            TraceIdRatioBased,
        )
    except ImportError:
        return None
    if type(tracer) is not Tracer:
        return None
    root: Any = tracer.sampler
    if type(root) in (ParentBased, ParentBasedTraceIdRatio):
        root = getattr(root, "_root", None)
    if type(root) is TraceIdRatioBased:
        bound: int = root.bound
        if bound > _TRACE_ID_LIMIT:  # rate 1: every id is kept, nothing to save
            return None
    elif (
        isinstance(root, StaticSampler)
        # The SDK's own always-off classes (ALWAYS_OFF, and OTEL_TRACES_SAMPLER's).
        and type(root).__module__ == StaticSampler.__module__
        and getattr(root, "_decision", None) is Decision.DROP
    ):
        bound = 0
    else:  # always on (nothing to save), or a sampler that may look at more than the id
        return None
    return RootSampling(tracer, bound)


def open_span(tracer: Any, name: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """A span under the current one, or the shared no-op when ``tracer`` is None."""
    if tracer is None:
        return NOOP
    return _Recording(tracer, name, attributes)
