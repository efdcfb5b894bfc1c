"""Spans with OpenTelemetry's database attributes, and a shared no-op when tracing is off."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from agentckpt.telemetry import _otel

__all__ = ["NOOP_SPAN", "SpanLike", "open_span"]

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


def open_span(tracer: Any, name: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """A span under the current one, or the shared no-op when ``tracer`` is None."""
    if tracer is None:
        return NOOP
    return _Recording(tracer, name, attributes)
