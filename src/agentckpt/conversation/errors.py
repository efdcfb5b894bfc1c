"""Errors of the conversation API; each subclasses the matching ``agentckpt.errors`` type.

::

    AgentckptError
    ├── ConfigDriftError      the runtime's agent config or tools differ from the checkpoint
    ├── TurnError             the call does not fit the conversation's turn (none open, ...)
    └── ResultNotLoadedError  a blob-backed tool result was read before it was loaded (async)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AgentckptError

if TYPE_CHECKING:
    from uuid import UUID

    from .recovery import Difference

__all__ = ["ConfigDriftError", "ResultNotLoadedError", "TurnError"]


class ConfigDriftError(AgentckptError):
    """The runtime offers another agent config or tool set than the checkpoint recorded.

    ``differences`` lists every difference (never only the first), so one error tells
    the operator all that must change, or that ``accept_drift=True`` must be passed.
    """

    def __init__(self, conversation_id: UUID, differences: list[Difference]) -> None:
        self.conversation_id = conversation_id
        self.differences = list(differences)
        lines = "\n".join(f"  - {d}" for d in self.differences)
        super().__init__(
            f"conversation {conversation_id}: the runtime differs from the checkpoint in "
            f"{len(self.differences)} place(s); fix the runtime or pass accept_drift=True:\n"
            f"{lines}"
        )


class TurnError(AgentckptError):
    """A call that does not fit the state of the turn (no open turn, one already open,
    a handle superseded by a newer one for the same conversation)."""


class ResultNotLoadedError(AgentckptError):
    """A tool result stored as a blob was read before it was loaded.

    The sync API loads such results on first access; the async API cannot block in an
    attribute access, so load them first with ``await conversation.load_result(call)``.
    """
