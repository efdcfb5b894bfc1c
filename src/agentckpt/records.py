"""The records the store returns: runs, steps and checkpoints. All are immutable."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run: its identity, head, lease and the configuration it was started with.

    ``config`` holds what the run was started with (for a conversation: the agent
    config and tool registry) and round-trips exactly. ``metadata`` is small queryable
    data (tokens, cost, user id) kept as JSON in the database; see ``Store.commit``.
    ``tenant_id`` is the tenant the run belongs to (``Store.connect(url, tenant=...)``).
    ``config_error`` is set only by ``Store.list_runs`` for a run whose stored config
    cannot be decoded (it says why, naming the run; ``config`` is then empty), so one
    damaged run does not hide the others; ``Store.get_run`` raises
    :class:`~agentckpt.errors.CorruptDataError` for it instead.
    """

    run_id: UUID
    kind: str
    agent_id: str
    status: str
    head_step: int | None
    head_open: bool
    snapshot_step: int | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_epoch: int
    heartbeat_at: datetime
    created_at: datetime
    updated_at: datetime
    parent_run_id: UUID | None
    parent_step: int | None
    config: dict[str, Any] = field(repr=False)
    metadata: dict[str, Any] = field(repr=False)
    error: str | None = None
    # Whose run it is (agentckpt.tenancy); "default" for a store opened without a tenant.
    tenant_id: str = "default"
    config_error: str | None = None


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One kept step of a run, without its state.

    ``kind`` is ``"snapshot"`` (stored whole) or ``"delta"`` (stored as a JSON Patch
    against ``parent_step``). ``raw_bytes`` is the encoded payload before compression,
    ``stored_bytes`` after; ``state_bytes`` is the size of the whole state encoded.
    ``write_version`` counts writes of the step: only an open head is ever rewritten.
    """

    run_id: UUID
    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    codec: str
    state_version: int
    write_version: int
    raw_bytes: int
    stored_bytes: int
    state_bytes: int
    checksum: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run's state at one step. ``state`` is a fresh object the caller owns."""

    run_id: UUID
    step: int
    state: Any = field(repr=False)
    info: StepInfo
