"""Spans with OpenTelemetry's database attributes, and a shared no-op when tracing is off."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from agentckpt.telemetry import _otel

__all__ = ["NOOP_SPAN", "SpanLike", "drops_unsampled_children", "open_span", "unrecorded_trace"]

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
        from opentelemetry.sdk.trace.sampling import ParentBased
    except ImportError:  # a provider with a sampler but not the SDK's: ask it each time
        return False
    # Exactly the SDK's class: a subclass may decide otherwise.
    if type(sampler) is not ParentBased:
        return False
    describe: Any = sampler.get_description  # untyped in the SDK
    return _DROPS_CHILDREN.search(str(describe())) is not None


def unrecorded_trace() -> bool:
    """True when the current span is a valid span that is not sampled: its trace is not
    being recorded (an application's span, or an incoming ``traceparent``, sampled out)."""
    trace = _otel.trace
    span = trace.get_current_span()
    if span is trace.INVALID_SPAN or span.is_recording():
        return False
    context = span.get_span_context()
    return bool(context.is_valid and not context.trace_flags.sampled)


def open_span(tracer: Any, name: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """A span under the current one, or the shared no-op when ``tracer`` is None."""
    if tracer is None:
        return NOOP
    return _Recording(tracer, name, attributes)
