"""What a benchmark subject is: a way of storing the workloads, behind one interface.

Every subject gets the same specs and the same concurrency model (asyncio tasks on one
event loop, talking to the database through an async driver), so the figures differ only
by how each stores the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentckpt.bench.errors import ResultMismatchError
from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies
from agentckpt.bench.workload import ConversationSpec, TurnSpec

__all__ = [
    "ConversationSubject",
    "LongRunSubject",
    "Place",
    "SubjectKind",
    "check_config",
]


@dataclass(frozen=True, slots=True)
class Place:
    """Where one subject keeps one workload: a PostgreSQL schema or a SQLite file.

    ``location`` is the libpq URL of the server (PostgreSQL) or the file path (SQLite);
    ``name`` the schema name or the file path.
    """

    dialect: str
    name: str
    location: str
    pool_size: int

    @property
    def pg_options(self) -> str:
        """libpq ``options`` that put this schema first on the search path."""
        return f"-c search_path={self.name}"


class ConversationSubject(Protocol):
    """Stores conversations; the driver times ``user_message`` and ``complete_turn``."""

    async def start(self, spec: ConversationSpec) -> None:
        """Set a conversation up before its first turn (not timed)."""

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Make the turn's user message durable (timed: one write)."""

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Make the completed turn durable (timed: one write)."""

    async def read_latest(self, spec: ConversationSpec) -> int:
        """Read the latest stored state; returns its number of messages (timed)."""

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """Recover the conversation as a restarted process would (timed).

        Returns its number of messages and the last message's content, which the driver
        checks against what was written.
        """

    async def close(self) -> None:
        """Release connections."""


class LongRunSubject(Protocol):
    """Stores one long run; ``run`` records each step's write latency in ``sample``."""

    async def run(self, spec: LongRunSpec, sample: Latencies) -> None:
        """Write step 0 (not timed) and every step after it (each timed)."""

    async def read_latest(self, spec: LongRunSpec) -> dict[str, Any]:
        """Read the latest state (timed)."""

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """Recover the latest state as a restarted process would (timed)."""

    async def close(self) -> None:
        """Release connections."""


class SubjectKind(Protocol):
    """A subject family: its name, label, availability and its two workloads.

    A family that runs only one of them says so with a class attribute the runner reads
    with a default of True: ``has_long_run = False`` (the compiled graphs) or
    ``has_conversations = False`` (the overlapped run loop)."""

    name: str

    def label(self, dialect: str) -> str:
        """The column header in the report."""

    def unavailable(self, dialect: str) -> str | None:
        """Why this subject cannot run on ``dialect`` here, or None."""

    async def conversations(self, place: Place) -> ConversationSubject:
        """Open the conversation subject on a fresh place."""

    async def long_run(self, place: Place) -> LongRunSubject:
        """Open the long-run subject on a fresh place."""


def check_config(spec: ConversationSpec, agent_config: Any, tool_registry: Any) -> None:
    """Seed 000's recovery check: the checkpoint's config and tools match the runtime."""
    if agent_config != spec.agent_config or list(tool_registry) != spec.tool_registry:
        raise ResultMismatchError(
            f"conversation {spec.conversation_id}: stored agent config or tool registry "
            "differs from the runtime's"
        )
