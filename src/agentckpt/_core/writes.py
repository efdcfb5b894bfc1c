"""What one commit writes, and what the database answers: plain values, no I/O.

The store builds a :class:`StepWrite` from a commit plan before any I/O; a backend sends
it and answers :class:`Committed` or :class:`Refused`. Blob and history rows ride along,
so a step and everything it refers to become durable in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class BlobRow:
    """A content-addressed value written in the same transaction as a step."""

    digest: str
    codec: str
    size: int
    data: bytes


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """An archived part of a run's state, written in the same transaction as a step."""

    seq: int
    item_count: int
    codec: str
    payload: bytes
    raw_bytes: int


class StepWrite(NamedTuple):
    """Everything one commit writes, decided by the store before any I/O.

    The guard fields (``expected_step``, ``expected_version``, ``epoch``) make the write
    conditional: the backend writes nothing unless the run's head is still the one the
    writer read and, when fenced, its lease epoch is current. ``token`` is stored with
    the step: when the guard refuses, the step found stored with the same content is this
    write's own (same token, a retry) or another writer's (another token).

    A named tuple, not a frozen dataclass: one is built per commit, and a frozen
    dataclass of these 23 fields takes about 3 us to build (one ``object.__setattr__`` a
    field), a tuple under 1 us; it is as immutable (``_replace`` gives a changed copy).
    """

    run_id: UUID
    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    codec: str
    payload: bytes
    state_version: int
    write_version: int
    raw_bytes: int
    state_bytes: int
    checksum: bytes
    expected_step: int | None
    expected_version: int
    epoch: int | None
    snapshot_step: int
    chain_bytes: int
    prune_below: int | None
    seal_step: int | None
    metadata: str | None
    token: bytes
    blobs: tuple[BlobRow, ...] = ()
    history: tuple[HistoryRow, ...] = ()

    def params(self) -> dict[str, Any]:
        """The named parameters of the commit statements."""
        return {
            "run_id": self.run_id,
            "step": self.step,
            "parent_step": self.parent_step,
            "kind": self.kind,
            "is_open": self.is_open,
            "codec": self.codec,
            "payload": self.payload,
            "state_version": self.state_version,
            "write_version": self.write_version,
            "raw_bytes": self.raw_bytes,
            "state_bytes": self.state_bytes,
            "checksum": self.checksum,
            "expected_step": self.expected_step,
            "expected_version": self.expected_version,
            "epoch": self.epoch,
            "snapshot_step": self.snapshot_step,
            "chain_bytes": self.chain_bytes,
            "prune_below": self.prune_below,
            "seal_step": self.seal_step,
            "metadata": self.metadata,
            "write_token": self.token,
        }


@dataclass(frozen=True, slots=True)
class Committed:
    """The commit is durable; the database clock's timestamps of the step row."""

    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Refused:
    """The guard matched no row; ``probe`` is the run's head and the step as stored now.

    ``probe`` is None when the run does not exist.
    """

    probe: Row | None


CommitOutcome = Committed | Refused


__all__ = ["BlobRow", "CommitOutcome", "Committed", "HistoryRow", "Refused", "Row", "StepWrite"]
