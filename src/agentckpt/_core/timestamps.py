"""The one timestamp format agentckpt prints: ISO 8601 in UTC, with a ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso_utc"]


def iso_utc(value: datetime, *, precise: bool = False) -> str:
    """``2026-12-01T13:57:23Z`` (``precise``: with microseconds); a naive ``value`` is
    taken as UTC."""
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return utc.isoformat(timespec="microseconds" if precise else "seconds").replace("+00:00", "Z")
