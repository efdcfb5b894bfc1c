"""Adapters that let agent frameworks keep their state in agentckpt.

- :class:`~agentckpt.integrations.langgraph.AgentckptSaver`: a LangGraph checkpointer
  (``pip install 'agentckpt[langgraph]'``).
- :class:`~agentckpt.integrations.openai_agents.AgentckptSession`: an OpenAI Agents SDK
  session (``pip install 'agentckpt[openai-agents]'``).

Importing this package imports no framework: each adapter loads its framework when it is
first used (``from agentckpt.integrations import AgentckptSaver`` imports LangGraph then).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentckpt.integrations.langgraph import AgentckptSaver
    from agentckpt.integrations.openai_agents import AgentckptSession

__all__ = ["AgentckptSaver", "AgentckptSession"]

_HOMES = {
    "AgentckptSaver": (".langgraph", "langgraph"),
    "AgentckptSession": (".openai_agents", "openai-agents"),
}


def __getattr__(name: str) -> Any:
    try:
        module, extra = _HOMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    try:
        value = getattr(import_module(module, __name__), name)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"{name} needs the {extra!r} extra: pip install 'agentckpt[{extra}]' "
            f"({exc.name} is not installed)",
            name=exc.name,
        ) from exc
    globals()[name] = value
    return value
