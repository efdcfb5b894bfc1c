"""The OpenAI Agents SDK's session on agentckpt: ``pip install 'agentckpt[openai-agents]'``.

:class:`AgentckptSession` keeps a session's items as one agentckpt run; see
``docs/openai-agents.md``.
"""

from __future__ import annotations

from agentckpt.integrations.openai_agents.session import (
    RUN_KIND,
    AgentckptSession,
    session_run_id,
)

__all__ = ["RUN_KIND", "AgentckptSession", "session_run_id"]
