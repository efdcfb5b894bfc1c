"""How sizes and ages are written for people, the same in the CLI and the inspector."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["human_age", "human_bytes"]


def human_bytes(count: int | None) -> str:
    """``1234567`` -> ``1.2 MB`` (decimal units, as disk tools print them)."""
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def human_age(when: datetime | None, now: datetime | None = None) -> str:
    """How long ago ``when`` was: ``42s ago``, ``3m ago``, ``5h ago``, ``12d ago``."""
    if when is None:
        return "-"
    seconds = max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"
