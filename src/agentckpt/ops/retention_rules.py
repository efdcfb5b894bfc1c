"""Retention rules and reports (shared by ``retention_async.py`` and its sync twin)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentckpt.errors import ConfigurationError

__all__ = ["DAY", "Retention", "RetentionPolicy", "RetentionReport", "load_retention"]

DAY = 86400.0
# Past this a cut-off is before any timestamp the databases keep (PostgreSQL refuses the
# date, SQLite's text comparison would silently match nothing): None turns a rule off.
MAX_DAYS = 36_500
MAX_KEEP = 10**12
_RULES = ("ended_days", "failed_days", "keep_runs", "history_days")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionPolicy:
    """The four retention rules; None turns a rule off."""

    ended_days: float | None = None
    failed_days: float | None = None
    keep_runs: int | None = None
    history_days: float | None = None

    def __post_init__(self) -> None:
        for name in ("ended_days", "failed_days", "history_days"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= MAX_DAYS
            ):
                raise ConfigurationError(
                    f"retention {name} must be a number of days from 0 to {MAX_DAYS} "
                    f"(None: off), got {value!r}"
                )
        keep = self.keep_runs
        if keep is not None and (
            isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= MAX_KEEP
        ):
            raise ConfigurationError(
                f"retention keep_runs must be an int from 0 to {MAX_KEEP}, got {keep!r}"
            )

    @property
    def empty(self) -> bool:
        """True when no rule is on."""
        return all(getattr(self, name) is None for name in _RULES)

    def to_json(self) -> dict[str, Any]:
        """The rules as JSON (None for a rule that is off)."""
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """A store-wide policy and per-agent policies (which replace it for their agent)."""

    default: RetentionPolicy = field(default_factory=RetentionPolicy)
    agents: Mapping[str, RetentionPolicy] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A wrong type here would surface only when a retention pass reads it.
        if not isinstance(self.default, RetentionPolicy):
            raise ConfigurationError(
                f"retention default must be a RetentionPolicy, not {type(self.default).__name__}"
            )
        if not isinstance(self.agents, Mapping):
            raise ConfigurationError(
                f"retention agents must map agent ids to policies, not {type(self.agents).__name__}"
            )
        for agent, policy in self.agents.items():
            if type(agent) is not str or not isinstance(policy, RetentionPolicy):
                raise ConfigurationError(
                    f"retention agents must map agent ids (str) to RetentionPolicy, got "
                    f"{agent!r}: {type(policy).__name__}"
                )

    def to_json(self) -> dict[str, Any]:
        """``{"default": {...}, "agents": {"planner": {...}}}``."""
        return {
            "default": self.default.to_json(),
            "agents": {agent: policy.to_json() for agent, policy in sorted(self.agents.items())},
        }

    @classmethod
    def from_json(cls, value: Any, *, where: str = "retention") -> Retention:
        """Read :meth:`to_json`'s shape; :class:`ConfigurationError` names a bad field."""
        if not isinstance(value, dict) or not set(value) <= {"default", "agents"}:
            raise ConfigurationError(f"{where}: expected an object with 'default' and 'agents'")
        agents = value.get("agents", {})
        if not isinstance(agents, dict):
            raise ConfigurationError(f"{where}: 'agents' must be an object of policies")
        return cls(
            default=_policy(value.get("default", {}), f"{where}: default"),
            agents={str(a): _policy(p, f"{where}: agents.{a}") for a, p in agents.items()},
        )


def _policy(value: Any, where: str) -> RetentionPolicy:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: a policy must be an object")
    unknown = set(value) - set(_RULES)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown rule(s) {', '.join(sorted(unknown))} (known: {', '.join(_RULES)})"
        )
    try:
        return RetentionPolicy(**value)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def load_retention(path: str | Path) -> Retention:
    """A :class:`Retention` from a JSON file of :meth:`Retention.to_json`'s shape."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}: not JSON: {exc}") from None
    return Retention.from_json(value, where=str(path))


@dataclass(slots=True)
class RetentionReport:
    """What one pass deleted (or would, with ``dry_run``), and how long it took.

    ``longest_batch`` is the longest single delete statement, in seconds: its
    transaction is the longest any lock of the pass was held.
    """

    dry_run: bool
    runs_deleted: dict[str, int] = field(default_factory=dict)
    steps_pruned: int = 0
    runs_pruned: int = 0
    batches: int = 0
    seconds: float = 0.0
    longest_batch: float = 0.0

    @property
    def total_runs(self) -> int:
        """Runs deleted, over every rule."""
        return sum(self.runs_deleted.values())

    def to_json(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "dry_run": self.dry_run,
            "runs_deleted": dict(self.runs_deleted),
            "total_runs": self.total_runs,
            "steps_pruned": self.steps_pruned,
            "runs_pruned": self.runs_pruned,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "longest_batch_seconds": round(self.longest_batch, 4),
        }
