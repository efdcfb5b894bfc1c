"""The benchmark's results, as collected: per backend, per workload, per subject."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentckpt.bench.content import ContentSize
from agentckpt.bench.curves.model import Curves
from agentckpt.bench.driver import ConversationFigures, LongRunFigures
from agentckpt.bench.sites import Storage

__all__ = ["BackendResults", "ConversationCase", "LongRunCase"]

AGENTCKPT = "agentckpt"


@dataclass(frozen=True, slots=True)
class ConversationCase:
    """One subject's conversation figures in one mode, with its storage after the run."""

    figures: ConversationFigures
    storage: Storage
    # With --repeat: each round's figures (``figures`` holds their medians).
    rounds: tuple[ConversationFigures, ...] = ()


@dataclass(frozen=True, slots=True)
class LongRunCase:
    """One subject's long-run figures, with its storage after the run."""

    figures: LongRunFigures
    storage: Storage
    # With --repeat: each round's figures (``figures`` holds their medians).
    rounds: tuple[LongRunFigures, ...] = ()


@dataclass(slots=True)
class BackendResults:
    """Everything measured on one backend (``sqlite`` or ``postgresql``)."""

    dialect: str
    server: dict[str, Any]
    labels: dict[str, str]
    agents: int
    turns: int
    steps: int
    # Rounds of each workload (--repeat); the figures are their medians when over 1.
    repeat: int = 1
    conversations: dict[str, dict[str, ConversationCase]] = field(default_factory=dict)
    # Long-run cases by state shape (number of keys), then by subject.
    long_runs: dict[int, dict[str, LongRunCase]] = field(default_factory=dict)
    # The zstd-compressed size of the conversation content written (the storage floor).
    content: ContentSize | None = None
    # Curves (--curves), when measured.
    curves: Curves | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def storage_mode(self) -> str | None:
        """The mode whose storage, reads and resumes the summary uses (saturated first:
        both modes store the same content)."""
        for mode in ("saturated", "paced"):
            if mode in self.conversations:
                return mode
        return None

    def conversation(self, mode: str, name: str) -> ConversationCase | None:
        """The case of ``name`` in ``mode``, if it ran."""
        return self.conversations.get(mode, {}).get(name)

    @property
    def long_run(self) -> dict[str, LongRunCase]:
        """The long-run cases of the first shape measured (30 keys by default)."""
        return next(iter(self.long_runs.values()), {})

    def baselines(self) -> list[str]:
        """The subjects other than agentckpt, in report order."""
        return [name for name in self.labels if name != AGENTCKPT]
