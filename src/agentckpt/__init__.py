"""agentckpt: crash-proof checkpoints for LLM agent conversations and long agent runs.

Runs and their steps are stored in PostgreSQL or embedded SQLite; a new process resumes
from the exact logical state. Front doors: :class:`Conversations` (chat turns, seed 000's
format) and :class:`AgentRun` (long agent loops). Underneath, :class:`Store` (or
:class:`AsyncStore`)::

    from agentckpt import Store

    with Store.connect("sqlite:///agent.db") as store:
        run = store.create_run(agent_id="planner")
        store.commit(run.run_id, {"messages": [{"role": "user", "content": "hi"}]})
        print(store.latest(run.run_id).state)
"""

from __future__ import annotations

from agentckpt._core.codec import DEFAULT_LIMITS, Limits
from agentckpt._core.delta import apply as apply_patch
from agentckpt._core.delta import diff as diff_states
from agentckpt._core.policy import SnapshotPolicy
from agentckpt._core.versions import StateMigrations
from agentckpt._version import __version__
from agentckpt.conversation import AsyncConversations, Conversations
from agentckpt.crypto import Encryption
from agentckpt.errors import (
    AcknowledgedStepsLostError,
    AgentckptError,
    ConfigDriftError,
    ConfigurationError,
    ConflictError,
    CorruptDataError,
    DeltaChannelPruneError,
    ExportFormatError,
    FatalError,
    FencedError,
    InvalidPatchError,
    InvalidValueError,
    KeyUnavailableError,
    LeaseHeldError,
    LeaseLostError,
    MigrationError,
    NotFoundError,
    OutcomeUnknownError,
    PruneStrategyError,
    RedactionError,
    ResultNotLoadedError,
    RetriesExhaustedError,
    RunFailedError,
    RunNotFoundError,
    StaleHeadError,
    StateVersionError,
    StepAbandonedError,
    StepConflictError,
    StepNotFoundError,
    StorageFullError,
    StoreError,
    TenantError,
    TransientError,
    TurnError,
    UnavailableError,
)
from agentckpt.records import Checkpoint, RunInfo, StepInfo
from agentckpt.runs import AgentRun, AsyncAgentRun
from agentckpt.store.store import Store
from agentckpt.store.store_async import AsyncStore

__all__ = [
    "DEFAULT_LIMITS",
    "AcknowledgedStepsLostError",
    "AgentRun",
    "AgentckptError",
    "AsyncAgentRun",
    "AsyncConversations",
    "AsyncStore",
    "Checkpoint",
    "ConfigDriftError",
    "ConfigurationError",
    "ConflictError",
    "Conversations",
    "CorruptDataError",
    "DeltaChannelPruneError",
    "Encryption",
    "ExportFormatError",
    "FatalError",
    "FencedError",
    "InvalidPatchError",
    "InvalidValueError",
    "KeyUnavailableError",
    "LeaseHeldError",
    "LeaseLostError",
    "Limits",
    "MigrationError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PruneStrategyError",
    "RedactionError",
    "ResultNotLoadedError",
    "RetriesExhaustedError",
    "RunFailedError",
    "RunInfo",
    "RunNotFoundError",
    "SnapshotPolicy",
    "StaleHeadError",
    "StateMigrations",
    "StateVersionError",
    "StepAbandonedError",
    "StepConflictError",
    "StepInfo",
    "StepNotFoundError",
    "StorageFullError",
    "Store",
    "StoreError",
    "TenantError",
    "TransientError",
    "TurnError",
    "UnavailableError",
    "__version__",
    "apply_patch",
    "diff_states",
]
