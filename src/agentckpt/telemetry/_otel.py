"""The OpenTelemetry API, when it is installed (the ``otel`` extra); None otherwise."""

from __future__ import annotations

from typing import Any

trace: Any
metrics: Any
context: Any
try:
    from opentelemetry import context as _context
    from opentelemetry import metrics as _metrics
    from opentelemetry import trace as _trace
except ImportError:  # agentckpt then records nothing, at no cost
    trace = None
    metrics = None
    context = None
else:
    trace = _trace
    metrics = _metrics
    context = _context

__all__ = ["context", "global_meter_provider", "global_tracer_provider", "metrics", "trace"]


def global_tracer_provider() -> Any:
    """The application's tracer provider, or None while none is set (the API's proxy)."""
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, trace.ProxyTracerProvider) else provider


def global_meter_provider() -> Any:
    """The application's meter provider, or None while none is set (the API's proxy)."""
    if metrics is None:
        return None
    provider = metrics.get_meter_provider()
    # The API's placeholder before set_meter_provider() has no public class.
    return None if type(provider).__name__ == "_ProxyMeterProvider" else provider
