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

from agentckpt.blobstores import BlobStore, LocalBlobStore, S3BlobStore
from agentckpt.errors import (
    FatalError,
    LeaseHeldError,
    LeaseLostError,
    RetriesExhaustedError,
    RunFailedError,
    StepAbandonedError,
    TransientError,
)
from agentckpt.runs.audit import AuditLog
from agentckpt.runs.audit_async import AsyncAuditLog
from agentckpt.runs.blob_gc import gc_blobs
from agentckpt.runs.blob_gc_async import gc_blobs as gc_blobs_async
from agentckpt.runs.blob_refs import BlobGcReport, DeletedBlob
from agentckpt.runs.context import StepContext
from agentckpt.runs.context_async import AsyncStepContext
from agentckpt.runs.effect_keys import idempotency_key
from agentckpt.runs.event_rows import AuditEvent
from agentckpt.runs.lease_terms import Lease
from agentckpt.runs.loop import AgentRun
from agentckpt.runs.loop_async import AsyncAgentRun
from agentckpt.runs.names import run_id_for
from agentckpt.runs.offload import Artifact, OffloadPolicy
from agentckpt.runs.recovery import RecoveryWorker
from agentckpt.runs.recovery_async import AsyncRecoveryWorker
from agentckpt.runs.results import Finish, Recovered, RunResult
from agentckpt.runs.retry import RetryPolicy

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
    "StepAbandonedError",
    "StepContext",
    "TransientError",
    "gc_blobs",
    "gc_blobs_async",
    "idempotency_key",
    "run_id_for",
]
