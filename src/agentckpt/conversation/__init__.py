"""Conversation checkpoints: the format of seed 000 on agentckpt's store.

One durable write per completed turn (plus the user's message, durable before the model
is called), streamed replies coalesced, large tool results in the blob store, old turns
archived, and recovery that checks the agent config and tools and repairs dangling tool
calls. Sync and async APIs have the same methods::

    from agentckpt import Store
    from agentckpt.conversation import Conversations

    with Store.connect("sqlite:///agents.db") as store:
        conversations = Conversations(store)
        conv = conversations.start(
            agent_id="weather", agent_config={"model": "llama-3-70b"}, tools=["get_weather"]
        )
        conv.add_user_message("What's the weather in Berlin?")
        conv.add_assistant_message("Cloudy, 12 degrees.")

The pure modules (model, recovery, coalesce, archive, upgrades) are imported first; the
I/O classes load on first use, so ``agentckpt._sync.conversation`` and
``agentckpt._async.conversation`` may import this package's modules in any order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .coalesce import DEFAULT_FLUSH_INTERVAL, Coalescer
from .errors import ConfigDriftError, ResultNotLoadedError, TurnError
from .model import (
    CURRENT_VERSION,
    AgentConfig,
    ArchiveInfo,
    ConversationMetadata,
    ConversationState,
    Message,
    ToolCall,
    tool_names,
)
from .options import ConversationOptions
from .records import OrphanConversation, StateMigrationReport
from .recovery import (
    DanglingCall,
    Difference,
    PendingTurn,
    Recovery,
    config_drift,
    interrupted_result,
)
from .upgrades import state_migrations, upgrade_v1_to_v2

if TYPE_CHECKING:
    from .._async.conversation import AsyncConversations
    from .._async.conversation_read import AsyncConversationReader
    from .._async.conversation_turn import AsyncConversation
    from .._sync.conversation import Conversations
    from .._sync.conversation_read import ConversationReader
    from .._sync.conversation_turn import Conversation

_LAZY = {
    "AsyncConversations": ("agentckpt._async.conversation", "AsyncConversations"),
    "AsyncConversation": ("agentckpt._async.conversation_turn", "AsyncConversation"),
    "AsyncConversationReader": ("agentckpt._async.conversation_read", "AsyncConversationReader"),
    "ConversationReader": ("agentckpt._sync.conversation_read", "ConversationReader"),
    "Conversations": ("agentckpt._sync.conversation", "Conversations"),
    "Conversation": ("agentckpt._sync.conversation_turn", "Conversation"),
}


def __getattr__(name: str) -> Any:
    # The I/O modules import this package's pure modules; loading them lazily keeps the
    # import order free of cycles whichever side is imported first.
    if name in _LAZY:
        from importlib import import_module

        module, attr = _LAZY[name]
        value = getattr(import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_FLUSH_INTERVAL",
    "AgentConfig",
    "ArchiveInfo",
    "AsyncConversation",
    "AsyncConversationReader",
    "AsyncConversations",
    "Coalescer",
    "ConfigDriftError",
    "Conversation",
    "ConversationMetadata",
    "ConversationOptions",
    "ConversationReader",
    "ConversationState",
    "Conversations",
    "DanglingCall",
    "Difference",
    "Message",
    "OrphanConversation",
    "PendingTurn",
    "Recovery",
    "ResultNotLoadedError",
    "StateMigrationReport",
    "ToolCall",
    "TurnError",
    "config_drift",
    "interrupted_result",
    "state_migrations",
    "tool_names",
    "upgrade_v1_to_v2",
]
