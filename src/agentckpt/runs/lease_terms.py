"""Leases: which worker owns a run, until when, and under which fencing epoch.

A worker owns a run while its lease is live. The database keeps three columns on the run:
``lease_owner``, ``lease_expires_at`` (from the database clock) and ``lease_epoch``, which
goes up by one every time the lease changes hands. Every commit carries the epoch it was
granted, so a worker that was frozen past its expiry and then wakes up can no longer
write: its epoch is stale and the store raises :class:`~agentckpt.FencedError`.

The heartbeat renews the lease every ``ttl / 3`` seconds, so two renewals may fail (a
slow database, a long GC pause) before the lease lapses.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime

from agentckpt.errors import ConfigurationError

__all__ = ["Lease", "default_owner", "renew_interval", "validate_ttl"]

# Below this a lease would lapse between two heartbeats on a busy machine.
MIN_TTL = 0.05


@dataclass(frozen=True, slots=True)
class Lease:
    """A granted lease: ``epoch`` fences every write made under it."""

    owner: str
    epoch: int
    expires_at: datetime
    ttl: float


def validate_ttl(ttl: float) -> float:
    """Return ``ttl`` (seconds) if usable, else raise :class:`ConfigurationError`."""
    if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not ttl >= MIN_TTL:
        raise ConfigurationError(f"lease ttl must be a number of seconds >= {MIN_TTL}, got {ttl!r}")
    return float(ttl)


def renew_interval(ttl: float) -> float:
    """Seconds between heartbeats for a lease of ``ttl`` seconds: a third of it."""
    return validate_ttl(ttl) / 3


def default_owner() -> str:
    """A worker name unique to this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
