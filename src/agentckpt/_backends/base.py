"""The narrow interface every backend offers, and the rows that cross it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentckpt._core.writes import CommitOutcome, Row, StepWrite

__all__ = ["AsyncBackend", "Backend", "Params"]

Params = Mapping[str, Any]


class Backend(Protocol):
    """A synchronous connection to one database."""

    dialect: str
    # How many commit batches may be in flight at once (connections for them).
    max_batches: int
    # The tenant every statement is scoped to (agentckpt.tenancy).
    tenant: str

    def migrate(self) -> list[int]:
        """Apply pending migrations under a lock; return the versions applied now."""
        ...

    def applied_migrations(self) -> list[int]:
        """The migration versions recorded in the database."""
        ...

    def read(self, name: str, params: Params) -> list[Row]:
        """Run a named read-only query; one statement, one consistent snapshot."""
        ...

    def write(self, name: str, params: Params) -> list[Row]:
        """Run a named write in its own transaction; rows of its last statement."""
        ...

    def write_many(self, name: str, params: Sequence[Params]) -> None:
        """Run a named write once per parameter set, all in one transaction."""
        ...

    def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None:
        """Run named writes, each once per parameter set, in order, in one transaction."""
        ...

    def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Write steps of different runs in one transaction, each atomically or (its
        guard failing) not at all; one outcome per write, in order."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class AsyncBackend(Protocol):
    """The asynchronous twin of :class:`Backend`: same methods, awaited."""

    dialect: str
    max_batches: int
    tenant: str

    async def migrate(self) -> list[int]: ...

    async def applied_migrations(self) -> list[int]: ...

    async def read(self, name: str, params: Params) -> list[Row]: ...

    async def write(self, name: str, params: Params) -> list[Row]: ...

    async def write_many(self, name: str, params: Sequence[Params]) -> None: ...

    async def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None: ...

    async def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]: ...

    async def close(self) -> None: ...
