"""Run names: a run id a user can name, the same in every process (no I/O here)."""

from __future__ import annotations

import socket
import uuid

from agentckpt.errors import InvalidValueError

__all__ = ["named_owner", "run_id_for"]

# The namespace of the run ids that run names derive to (uuid5, so every process agrees).
_NAMES = uuid.UUID("5f0c8f0e-2b5e-4d46-9a1e-7d3c6a6b2f10")


def run_id_for(agent_id: str, name: str) -> uuid.UUID:
    """The run id of the run named ``name`` of agent ``agent_id``: the same in every
    process, so ``AgentRun(store, agent_id=..., name=...)`` resumes that run."""
    if not isinstance(agent_id, str) or not isinstance(name, str) or not name:
        raise InvalidValueError(
            "name", f"a run name is a non-empty str of an agent_id str, got {name!r}"
        )
    if "\x00" in name:
        # The name goes into the lease owner, a text column: PostgreSQL refuses U+0000
        # there (after the run was created) while SQLite keeps it; refuse it on both.
        raise InvalidValueError(
            "name", f"run name {name!r} contains U+0000, which no backend stores"
        )
    try:
        return uuid.uuid5(_NAMES, f"{len(agent_id)}:{agent_id}:{name}")
    except UnicodeEncodeError:
        raise InvalidValueError("name", f"{name!r} of {agent_id!r} is not valid UTF-8") from None


def named_owner(agent_id: str, name: str) -> str:
    """The default lease owner of a named run: this host and the run's name, so the same
    call restarted on this host after a crash takes its own lease over at once (another
    host waits for the lease to expire)."""
    return f"{socket.gethostname()}:{agent_id}:{name}"
