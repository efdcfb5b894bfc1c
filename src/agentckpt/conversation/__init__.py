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
"""

from __future__ import annotations

from agentckpt.conversation.coalesce import DEFAULT_FLUSH_INTERVAL, Coalescer
from agentckpt.conversation.conversations import Conversations
from agentckpt.conversation.conversations_async import AsyncConversations
from agentckpt.conversation.model import (
    CURRENT_VERSION,
    AgentConfig,
    ArchiveInfo,
    ConversationMetadata,
    ConversationState,
    Message,
    ToolCall,
    tool_names,
)
from agentckpt.conversation.options import ConversationOptions
from agentckpt.conversation.reader import ConversationReader
from agentckpt.conversation.reader_async import AsyncConversationReader
from agentckpt.conversation.records import (
    OrphanConversation,
    RecoveredConversation,
    StateMigrationReport,
)
from agentckpt.conversation.recovery import (
    DanglingCall,
    Difference,
    PendingTurn,
    Recovery,
    config_drift,
    interrupted_result,
)
from agentckpt.conversation.recovery_worker import ConversationRecoveryWorker
from agentckpt.conversation.recovery_worker_async import AsyncConversationRecoveryWorker
from agentckpt.conversation.turn import Conversation
from agentckpt.conversation.turn_async import AsyncConversation
from agentckpt.conversation.upgrades import state_migrations, upgrade_v1_to_v2
from agentckpt.errors import ConfigDriftError, ResultNotLoadedError, TurnError

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_FLUSH_INTERVAL",
    "AgentConfig",
    "ArchiveInfo",
    "AsyncConversation",
    "AsyncConversationReader",
    "AsyncConversationRecoveryWorker",
    "AsyncConversations",
    "Coalescer",
    "ConfigDriftError",
    "Conversation",
    "ConversationMetadata",
    "ConversationOptions",
    "ConversationReader",
    "ConversationRecoveryWorker",
    "ConversationState",
    "Conversations",
    "DanglingCall",
    "Difference",
    "Message",
    "OrphanConversation",
    "PendingTurn",
    "RecoveredConversation",
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
