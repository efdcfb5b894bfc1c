"""Long agent runs: a checkpoint per step, resumable anywhere after a crash.

The run loop (:class:`AgentRun`, :class:`AsyncAgentRun`) commits one step per iteration
as a delta with periodic snapshots, retries transient failures from the last checkpoint,
records side effects so a replay does not repeat them, moves large values to a blob
store, and fences every write with a lease so that only one worker drives a run::

    from agentckpt import Store
    from agentckpt.runs import AgentRun, Finish

    def step(ctx):
        ctx.state["n"] += 1
        return Finish(ctx.state) if ctx.state["n"] == 10 else ctx.state

    with Store.connect("sqlite:///runs.db") as store:
        result = AgentRun(store, run_id, initial_state={"n": 0}).run(step)

See ``docs/runs.md`` for the whole story.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..blobstores import BlobStore, LocalBlobStore, S3BlobStore
from .effects import idempotency_key
from .errors import (
    FatalError,
    LeaseHeldError,
    LeaseLostError,
    RetriesExhaustedError,
    RunFailedError,
    TransientError,
)
from .events import AuditEvent
from .gc import BlobGcReport, DeletedBlob
from .lease import Lease
from .offload import Artifact, OffloadPolicy
from .results import Finish, Recovered, RunResult
from .retry import RetryPolicy

if TYPE_CHECKING:
    from .._async.audit import AsyncAuditLog
    from .._async.blobgc import gc_blobs as gc_blobs_async
    from .._async.recovery import AsyncRecoveryWorker
    from .._async.runloop import AsyncAgentRun, AsyncStepContext
    from .._sync.audit import AuditLog
    from .._sync.blobgc import gc_blobs
    from .._sync.recovery import RecoveryWorker
    from .._sync.runloop import AgentRun, StepContext

# The I/O classes are loaded on first use: they import this package's pure modules, so
# importing them here eagerly would be a cycle whenever a generated module is imported
# before this package.
_LAZY = {
    "AgentRun": ("agentckpt._sync.runloop", "AgentRun"),
    "StepContext": ("agentckpt._sync.runloop", "StepContext"),
    "RecoveryWorker": ("agentckpt._sync.recovery", "RecoveryWorker"),
    "AuditLog": ("agentckpt._sync.audit", "AuditLog"),
    "gc_blobs": ("agentckpt._sync.blobgc", "gc_blobs"),
    "AsyncAgentRun": ("agentckpt._async.runloop", "AsyncAgentRun"),
    "AsyncStepContext": ("agentckpt._async.runloop", "AsyncStepContext"),
    "AsyncRecoveryWorker": ("agentckpt._async.recovery", "AsyncRecoveryWorker"),
    "AsyncAuditLog": ("agentckpt._async.audit", "AsyncAuditLog"),
    "gc_blobs_async": ("agentckpt._async.blobgc", "gc_blobs"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'agentckpt.runs' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AgentRun",
    "Artifact",
    "AsyncAgentRun",
    "AsyncAuditLog",
    "AsyncRecoveryWorker",
    "AsyncStepContext",
    "AuditEvent",
    "AuditLog",
    "BlobGcReport",
    "BlobStore",
    "DeletedBlob",
    "FatalError",
    "Finish",
    "Lease",
    "LeaseHeldError",
    "LeaseLostError",
    "LocalBlobStore",
    "OffloadPolicy",
    "Recovered",
    "RecoveryWorker",
    "RetriesExhaustedError",
    "RetryPolicy",
    "RunFailedError",
    "RunResult",
    "S3BlobStore",
    "StepContext",
    "TransientError",
    "gc_blobs",
    "gc_blobs_async",
    "idempotency_key",
]
