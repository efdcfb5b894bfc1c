"""What the curves hold: plain figures, no I/O (the report and the plots read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FULL_READ",
    "FULL_READ_LABEL",
    "BytesCurve",
    "CommitCurve",
    "Curves",
    "Memory",
    "ResumeScaling",
    "ThroughputCurve",
    "window_mean",
]

# Turn windows the report prints and the targets read: the mean over [start, start + 40).
WINDOW = 40


def window_mean(values: list[float], start: int, width: int = WINDOW) -> float | None:
    """Mean of ``values[start - 1 : start - 1 + width]`` (turns count from 1), the window
    moved back to fit when it runs past the end; None when there is no such turn."""
    if start > len(values) or start < 1:
        return None
    first = max(min(start - 1, len(values) - width), 0)
    window = values[first : first + width]
    return sum(window) / len(window)


# The resume row of agentckpt's full read (``recover()``, every archived message read),
# beside its resume (``open()``, the hot state only), and its label in the report.
FULL_READ = "agentckpt-full-read"
FULL_READ_LABEL = "agentckpt recover(), all history read"


@dataclass(slots=True)
class CommitCurve:
    """Client CPU and wall time per commit, per turn, of one subject's long conversation."""

    subject: str
    label: str
    cpu_ms: list[float] = field(default_factory=list)  # per turn: mean over its commits
    wall_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As a JSON object (one value per turn)."""
        return {
            "label": self.label,
            "cpu_ms_per_commit": [round(v, 4) for v in self.cpu_ms],
            "wall_ms_per_commit": [round(v, 4) for v in self.wall_ms],
        }


@dataclass(slots=True)
class BytesCurve:
    """Bytes stored (after a VACUUM on PostgreSQL) against turns or steps written."""

    subject: str
    label: str
    points: list[tuple[int, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {"label": self.label, "points": [list(p) for p in self.points]}


@dataclass(slots=True)
class ThroughputCurve:
    """Saturated writes and turns per second against concurrent agents."""

    subject: str
    label: str
    points: list[tuple[int, float, float]] = field(default_factory=list)  # agents, w/s, t/s

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "label": self.label,
            "points": [
                {"agents": a, "writes_per_s": round(w, 1), "turns_per_s": round(t, 1)}
                for a, w, t in self.points
            ],
        }


@dataclass(frozen=True, slots=True)
class ResumeScaling:
    """Resume P50/P99 (ms) of the same conversation at a short and at its full length."""

    subject: str
    short_turns: int
    long_turns: int
    short_p50: float
    short_p99: float
    long_p50: float
    long_p99: float

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "short_turns": self.short_turns,
            "long_turns": self.long_turns,
            "short_p50_ms": round(self.short_p50, 3),
            "short_p99_ms": round(self.short_p99, 3),
            "long_p50_ms": round(self.long_p50, 3),
            "long_p99_ms": round(self.long_p99, 3),
        }


@dataclass(frozen=True, slots=True)
class Memory:
    """Client RSS with many active runs on one store, and its head cache."""

    runs: int
    rss_before: int
    rss_after: int
    cached_heads: int
    cache_limit: int

    @property
    def per_run(self) -> float:
        """RSS growth per active run, in bytes."""
        return (self.rss_after - self.rss_before) / max(self.runs, 1)

    @property
    def per_cached_run(self) -> float:
        """RSS growth per cached head, in bytes (what the cache's limit bounds)."""
        return (self.rss_after - self.rss_before) / max(self.cached_heads, 1)

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "runs": self.runs,
            "rss_before_bytes": self.rss_before,
            "rss_after_bytes": self.rss_after,
            "rss_per_run_bytes": round(self.per_run, 1),
            "rss_per_cached_run_bytes": round(self.per_cached_run, 1),
            "cached_heads": self.cached_heads,
            "cache_limit": self.cache_limit,
        }


@dataclass(slots=True)
class Curves:
    """Every curve measured on one backend."""

    turns: int
    steps: int
    commit_cost: list[CommitCurve] = field(default_factory=list)
    bytes_by_turn: list[BytesCurve] = field(default_factory=list)
    bytes_by_step: list[BytesCurve] = field(default_factory=list)
    throughput: list[ThroughputCurve] = field(default_factory=list)
    resume: list[ResumeScaling] = field(default_factory=list)
    memory: Memory | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "turns": self.turns,
            "steps": self.steps,
            "commit_cost": {c.subject: c.to_json() for c in self.commit_cost},
            "bytes_by_turn": {c.subject: c.to_json() for c in self.bytes_by_turn},
            "bytes_by_step": {c.subject: c.to_json() for c in self.bytes_by_step},
            "throughput": {c.subject: c.to_json() for c in self.throughput},
            "resume": {r.subject: r.to_json() for r in self.resume},
            "memory": self.memory.to_json() if self.memory else None,
            "errors": self.errors,
        }
