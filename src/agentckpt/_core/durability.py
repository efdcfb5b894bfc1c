"""PostgreSQL settings under which an acknowledged commit can be lost (pure, no I/O).

Shared by ``agentckpt doctor`` (``cli/durability.py``), which reports every durability
setting with what to change, and the PostgreSQL backend, which logs one warning when a
store connects to a server running with any of these. The experiments behind each rule
are in the reliability research (``research/reliability.md`` in the shared notes):
``synchronous_commit = off`` lost 19 to 38 acknowledged commits on a plain server crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "WEAK_SETTINGS_QUERY",
    "Weakness",
    "fsync_weakness",
    "full_page_writes_weakness",
    "synchronous_commit_weakness",
    "weak_settings",
]

# The settings weak_settings reads, as the connection that runs it sees them (a role,
# a database or the connection's own options may override the server's default). With
# missing_ok: a PostgreSQL-compatible engine without one of them answers NULL, and the
# store still connects.
WEAK_SETTINGS_QUERY = (
    "SELECT current_setting('synchronous_commit', true) AS synchronous_commit, "
    "current_setting('fsync', true) AS fsync, "
    "current_setting('full_page_writes', true) AS full_page_writes, "
    "current_setting('synchronous_standby_names', true) AS synchronous_standby_names"
)


@dataclass(frozen=True, slots=True)
class Weakness:
    """A setting that can lose acknowledged commits: its value, what it risks and what to
    change (``risk``, one sentence or two)."""

    setting: str
    value: str
    risk: str

    def describe(self) -> str:
        """``setting = value: risk``, for a log line."""
        return f"{self.setting} = {self.value}: {self.risk}"


def synchronous_commit_weakness(value: str, standby_names: str) -> Weakness | None:
    """``off`` anywhere, or ``local`` while ``synchronous_standby_names`` names standbys."""
    if value == "off":
        return Weakness(
            "synchronous_commit",
            value,
            "a server crash loses commits that were already acknowledged: run "
            "ALTER ROLE <agentckpt user> SET synchronous_commit = on (or set it in "
            "postgresql.conf and SELECT pg_reload_conf())",
        )
    if value == "local" and standby_names.strip():
        return Weakness(
            "synchronous_commit",
            value,
            "commits do not wait for the synchronous standby, so a failover can lose "
            "acknowledged commits: set synchronous_commit = on",
        )
    return None


def fsync_weakness(value: str) -> Weakness | None:
    """Anything but ``fsync = on``."""
    if value == "on":
        return None
    return Weakness(
        "fsync",
        value,
        "a power loss or OS crash can corrupt the whole cluster: set fsync = on in "
        "postgresql.conf and reload (never run production with it off)",
    )


def full_page_writes_weakness(value: str) -> Weakness | None:
    """Anything but ``full_page_writes = on``."""
    if value == "on":
        return None
    return Weakness(
        "full_page_writes",
        value,
        "a crash mid-write can leave torn pages that WAL replay cannot repair: set "
        "full_page_writes = on (off is safe only on a filesystem with atomic 8 KB "
        "writes, such as ZFS)",
    )


def weak_settings(settings: Mapping[str, Any]) -> list[Weakness]:
    """The weaknesses among ``settings`` (the columns of :data:`WEAK_SETTINGS_QUERY`,
    or of the doctor's ``ops_durability``), in that order; empty when none. A setting
    the server does not have (``None``: a PostgreSQL-compatible engine) is not judged."""
    commit = settings.get("synchronous_commit")
    fsync = settings.get("fsync")
    full_page_writes = settings.get("full_page_writes")
    found = [
        None
        if commit is None
        else synchronous_commit_weakness(
            str(commit), str(settings.get("synchronous_standby_names") or "")
        ),
        None if fsync is None else fsync_weakness(str(fsync)),
        None if full_page_writes is None else full_page_writes_weakness(str(full_page_writes)),
    ]
    return [weakness for weakness in found if weakness is not None]
