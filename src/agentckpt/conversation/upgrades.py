"""Versions of the conversation state format and the upgrades between them.

- **Version 1** (seed 000's first format): ``conversation``, ``agent_config`` and
  ``metadata``; no ``tool_registry``, and usually no ``version`` key at all (a state
  without one is version 1).
- **Version 2** (current): adds ``tool_registry``, the tools the agent may call, which
  recovery checks against the runtime.

Upgrades run when a state is read; ``Conversations.migrate_states()`` also rewrites
stored states in bulk. Register later versions with :func:`state_migrations`'s object.
"""

from __future__ import annotations

from typing import Any

from agentckpt._core.versions import StateMigrations
from agentckpt.conversation.model import CURRENT_VERSION

__all__ = ["state_migrations", "upgrade_v1_to_v2"]


def upgrade_v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """Add ``tool_registry``: the tools a version-1 conversation called, in order of first
    use (the best record there is of what the agent had). Key order follows version 2:
    ``version`` first, ``tool_registry`` after ``agent_config``."""
    used: list[str] = []
    for message in state.get("conversation") or []:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            name = call.get("tool_name") if isinstance(call, dict) else None
            if isinstance(name, str) and name not in used:
                used.append(name)
    out: dict[str, Any] = {"version": 2}
    for key, value in state.items():
        if key == "version":
            continue
        out[key] = value
        if key == "agent_config":
            out["tool_registry"] = used
    out.setdefault("tool_registry", used)
    return out


def state_migrations() -> StateMigrations:
    """The upgrades from every known version to :data:`CURRENT_VERSION` (a new object;
    pass it as ``Store.connect(..., migrations=...)`` to read conversations through the
    plain store API too)."""
    migrations = StateMigrations(current=CURRENT_VERSION)
    migrations.add(1, upgrade_v1_to_v2)
    return migrations
