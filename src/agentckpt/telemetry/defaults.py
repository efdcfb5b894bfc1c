"""The telemetry a store uses when given none: the application's global providers."""

from __future__ import annotations

from agentckpt.telemetry.telemetry import Telemetry

__all__ = ["GLOBAL_TELEMETRY"]

# One object for every store left to the defaults: it only mirrors OpenTelemetry's own
# global providers (set once per process by the application), so it holds no settings
# of its own, and its instruments are created once rather than once per store.
GLOBAL_TELEMETRY = Telemetry()
