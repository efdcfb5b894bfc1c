"""How sizes and ages are written for people, the same in the CLI and the inspector."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["human_age", "human_bytes", "human_duration"]


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


def human_duration(seconds: float) -> str:
    """A length of time in its two largest units: ``42s``, ``3m 5s``, ``5h 2m``, ``12d 3h``."""
    total = int(max(0.0, seconds))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return " ".join(parts)
