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

from ._async.store import AsyncStore
from ._core.codec import DEFAULT_LIMITS, Limits
from ._core.delta import apply as apply_patch
from ._core.delta import diff as diff_states
from ._core.policy import SnapshotPolicy
from ._core.versions import StateMigrations
from ._sync.store import Store
from .conversation import AsyncConversations, Conversations
from .errors import (
    AgentckptError,
    ConfigurationError,
    ConflictError,
    CorruptDataError,
    FencedError,
    InvalidPatchError,
    InvalidValueError,
    MigrationError,
    NotFoundError,
    OutcomeUnknownError,
    RunNotFoundError,
    StaleHeadError,
    StateVersionError,
    StepConflictError,
    StepNotFoundError,
    StorageFullError,
    StoreError,
    UnavailableError,
)
from .records import Checkpoint, RunInfo, StepInfo
from .runs import AgentRun, AsyncAgentRun, FatalError, TransientError

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "AgentRun",
    "AgentckptError",
    "AsyncAgentRun",
    "AsyncConversations",
    "AsyncStore",
    "Checkpoint",
    "ConfigurationError",
    "ConflictError",
    "Conversations",
    "CorruptDataError",
    "FatalError",
    "FencedError",
    "InvalidPatchError",
    "InvalidValueError",
    "Limits",
    "MigrationError",
    "NotFoundError",
    "OutcomeUnknownError",
    "RunInfo",
    "RunNotFoundError",
    "SnapshotPolicy",
    "StaleHeadError",
    "StateMigrations",
    "StateVersionError",
    "StepConflictError",
    "StepInfo",
    "StepNotFoundError",
    "StorageFullError",
    "Store",
    "StoreError",
    "TransientError",
    "UnavailableError",
    "__version__",
    "apply_patch",
    "diff_states",
]
