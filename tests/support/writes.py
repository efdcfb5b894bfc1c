"""Step writes built by hand, for tests that drive a backend or group commit directly."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from agentckpt._core.writes import Payload, StepWrite


def step_write(
    run: uuid.UUID | None = None,
    step: int = 1,
    *,
    payload: bytes = b"{}",
    kind: str = "snapshot",
) -> StepWrite:
    """A first snapshot of ``run`` (a new run if None) as ``step``, holding ``payload``."""
    return StepWrite(
        run_id=run or uuid.uuid4(),
        step=step,
        parent_step=None,
        kind=kind,
        is_open=False,
        stored=Payload.packed("json", payload),
        state_version=1,
        write_version=1,
        raw_bytes=len(payload),
        state_bytes=len(payload),
        checksum=hashlib.sha256(payload).digest(),
        expected_step=None,
        expected_version=0,
        epoch=None,
        snapshot_step=step,
        chain_bytes=0,
        prune_below=None,
        seal_step=None,
        metadata=None,
        token=uuid.uuid4().bytes,
    )


def recorded_writes(store: Any) -> list[StepWrite]:
    """Every write a sync store's backend commits from now on (its ``commit_batch`` is
    wrapped to note them)."""
    backend: Any = store.backend
    real = backend.commit_batch
    seen: list[StepWrite] = []

    def commit_batch(writes: Any) -> Any:
        seen.extend(writes)
        return real(writes)

    backend.commit_batch = commit_batch
    return seen
