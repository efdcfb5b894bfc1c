"""Spans with OpenTelemetry's database attributes, and a shared no-op when tracing is off."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
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


@contextmanager
def _recording(tracer: Any, name: str, attributes: Attributes) -> Iterator[Any]:
    kind = _otel.trace.SpanKind.CLIENT
    with tracer.start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=True, set_status_on_exception=True
    ) as span:
        try:
            yield span
        except BaseException as exc:
            # The semantic conventions' error.type; the SDK also sets the ERROR status and
            # records the exception (type, message, stack) as an event.
            span.set_attribute("error.type", type(exc).__qualname__)
            raise


def open_span(tracer: Any, name: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """A span under the current one, or the shared no-op when ``tracer`` is None."""
    if tracer is None:
        return NOOP
    return _recording(tracer, name, attributes)
