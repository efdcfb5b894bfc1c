"""Records the conversation API returns besides the state: orphans and migration reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

__all__ = ["OrphanConversation", "RecoveredConversation", "StateMigrationReport"]


@dataclass(frozen=True, slots=True)
class OrphanConversation:
    """An active conversation whose writer stopped sending heartbeats.

    ``head_step`` is None when the process died before the first turn (only the
    heartbeat record exists); ``head_open`` is True when it died mid-turn.
    """

    conversation_id: UUID
    agent_id: str
    head_step: int | None
    head_open: bool
    heartbeat_at: datetime
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RecoveredConversation:
    """What a conversation recovery worker did with one orphan it claimed at ``epoch``:
    the factory's ``result``, or the ``error`` it raised (the conversation is then tried
    again once the worker's lease has expired)."""

    conversation_id: UUID
    agent_id: str
    epoch: int
    result: Any = None
    error: BaseException | None = None


@dataclass(slots=True)
class StateMigrationReport:
    """What ``migrate_states()`` did: conversations looked at, upgraded (one new step
    each, or a rewrite of an open turn), already current, refused because a writer
    moved them meanwhile (``conflicts``; run again), and failed with the reason."""

    scanned: int = 0
    upgraded: int = 0
    already_current: int = 0
    conflicts: list[UUID] = field(default_factory=list)
    failed: dict[UUID, str] = field(default_factory=dict)
