"""The OpenTelemetry API, when it is installed (the ``otel`` extra); None otherwise."""

from __future__ import annotations

import os
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


def _api_global(module: Any, name: str, env: str) -> Any:
    """Where the API keeps its global provider (``module.name``), for a lookup that costs
    one attribute read while telemetry is off; None when that is not known: then only the
    public lookup is trusted (a newer API, or a provider named by the environment
    variable ``env``, which the public lookup loads on first use)."""
    if module is None or env in os.environ or not hasattr(module, name):
        return None
    return module


# The API's get_*_provider() tests os.environ on every call while no provider is set
# (microseconds, twice per commit with telemetry off); reading the module global it
# checks first is the same answer at the cost of one attribute read. The environment
# variables are read once, here: one set after import names no provider to agentckpt
# until set_*_provider() or a first public lookup elsewhere installs it.
_TRACE_API = _api_global(trace, "_TRACER_PROVIDER", "OTEL_PYTHON_TRACER_PROVIDER")
_METRICS_API = _api_global(
    None if metrics is None else getattr(metrics, "_internal", None),
    "_METER_PROVIDER",
    "OTEL_PYTHON_METER_PROVIDER",
)


def global_tracer_provider() -> Any:
    """The application's tracer provider, or None while none is set (the API's proxy)."""
    if trace is None:
        return None
    if _TRACE_API is not None and _TRACE_API._TRACER_PROVIDER is None:
        return None
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, trace.ProxyTracerProvider) else provider


def global_meter_provider() -> Any:
    """The application's meter provider, or None while none is set (the API's proxy)."""
    if metrics is None:
        return None
    if _METRICS_API is not None and _METRICS_API._METER_PROVIDER is None:
        return None
    provider = metrics.get_meter_provider()
    # The API's placeholder before set_meter_provider() has no public class.
    return None if type(provider).__name__ == "_ProxyMeterProvider" else provider
