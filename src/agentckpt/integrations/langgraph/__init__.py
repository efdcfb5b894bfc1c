"""LangGraph's checkpointer on agentckpt: ``pip install 'agentckpt[langgraph]'``.

:class:`AgentckptSaver` stores every checkpoint of a thread as a step of one agentckpt
run (a small delta against the previous one); see ``docs/langgraph.md``.
"""

from __future__ import annotations

from agentckpt.integrations.langgraph.saver import (
    DEFAULT_POLICY,
    RUN_KIND,
    AgentckptSaver,
    DeltaChannelPruneError,
    PruneStrategyError,
)

__all__ = [
    "DEFAULT_POLICY",
    "RUN_KIND",
    "AgentckptSaver",
    "DeltaChannelPruneError",
    "PruneStrategyError",
]
