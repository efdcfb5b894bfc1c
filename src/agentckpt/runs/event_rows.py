"""Audit events: the raw record of what happened in a run, kept apart from its checkpoints.

Checkpoints hold only what a resume needs and are pruned; the audit log (the ``events``
table) is append-only and never read on the hot path. Event kinds written by the run
loop:

- ``run.started``: ``{"owner", "epoch", "step"}``: a worker took the run at ``step``.
- ``step.committed``: ``{"parent_step", "kind", "attempt", "state"}``: the committed
  state, with large values as blob references.
- ``step.retry``: ``{"attempt", "error"}``: a transient failure, retried.
- ``run.failed``: ``{"error"}``; ``run.completed``: ``{}``.

A step may add its own with ``ctx.emit(kind, data)``, e.g. raw model responses.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from agentckpt._core.codec import DEFAULT_LIMITS, Limits, decode, encode
from agentckpt._core.compression import pack, unpack

__all__ = ["AuditEvent", "event_row", "read_event"]


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One event as stored; ``created_at`` is from the database clock."""

    run_id: UUID
    event_id: UUID
    step: int | None
    kind: str
    data: Any = field(repr=False)
    created_at: datetime


def event_row(
    run_id: UUID, step: int | None, kind: str, data: Any, *, limits: Limits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """The row to insert for an event (validates ``data`` as a JSON value)."""
    codec, payload = pack(encode(data, limits=limits))
    return {
        "run_id": run_id,
        "event_id": uuid.uuid4(),
        "step": step,
        "kind": kind,
        "codec": codec,
        "payload": payload,
    }


def read_event(run_id: UUID, row: dict[str, Any]) -> AuditEvent:
    """An event from a row of ``runs_list_events``."""
    where = f"run {run_id} event {row['event_id']}"
    event_id = row["event_id"]
    return AuditEvent(
        run_id=run_id,
        event_id=event_id if isinstance(event_id, UUID) else UUID(str(event_id)),
        step=row["step"],
        kind=row["kind"],
        data=decode(unpack(row["codec"], bytes(row["payload"]), where=where)),
        created_at=row["created_at"],
    )
