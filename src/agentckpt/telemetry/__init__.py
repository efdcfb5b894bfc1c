"""Spans, metrics and logs of agentckpt (OpenTelemetry API, optional Prometheus endpoint).

See docs/operations.md for every span, metric and logger. Nothing is recorded, at no
cost, until the application sets an OpenTelemetry provider or passes one (or a
:class:`PrometheusMetrics`) in a :class:`Telemetry` given to the store.
"""

from __future__ import annotations

from agentckpt.telemetry.catalogue import LOGGERS, METRICS, SPANS, MetricSpec
from agentckpt.telemetry.probes import CommitProbe, outcome_of
from agentckpt.telemetry.telemetry import Telemetry

__all__ = [
    "LOGGERS",
    "METRICS",
    "SPANS",
    "CommitProbe",
    "MetricSpec",
    "Telemetry",
    "outcome_of",
]
