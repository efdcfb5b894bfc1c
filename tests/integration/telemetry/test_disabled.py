"""Telemetry off costs an attribute read per hook, and a provider set later still counts.

Global providers can be set once per process, so each case runs in its own interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import agentckpt

SRC = Path(agentckpt.__file__).resolve().parents[1]

LATE = """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from agentckpt.telemetry import _otel
from agentckpt.telemetry.telemetry import Telemetry

telemetry = Telemetry()
assert _otel._TRACE_API is not None and _otel._METRICS_API is not None  # the fast path
assert telemetry.tracer() is None and not telemetry.metering
with telemetry.commit("sqlite", "run", 1) as probe:
    probe.done(1, "delta", 10)
tracer_provider, meter_provider = TracerProvider(), MeterProvider()
trace.set_tracer_provider(tracer_provider)
metrics.set_meter_provider(meter_provider)
assert _otel.global_tracer_provider() is tracer_provider
assert _otel.global_meter_provider() is meter_provider
assert telemetry.tracer() is not None and telemetry.metering
"""

FROM_ENV = """
import os
from agentckpt.telemetry import _otel
# A provider named by the environment is the public lookup's to load: no fast path.
assert _otel._TRACE_API is None and _otel._METRICS_API is None
"""


def run(code: str, **env: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", **env},
    )
    assert done.returncode == 0, done.stderr


def test_a_provider_set_after_the_store_opened_is_found() -> None:
    run(LATE)


def test_a_provider_named_by_the_environment_takes_the_public_lookup() -> None:
    run(
        FROM_ENV,
        OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider",
        OTEL_PYTHON_METER_PROVIDER="sdk_meter_provider",
    )
