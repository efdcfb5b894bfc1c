"""The parameters of PostgreSQL's commit statements, built from step writes; no I/O.

``commit_steps`` takes a batch of writes of different runs, one array per column;
``commit_chain`` (and ``commit_chain_plain``) one run's next steps, each guarded by the
one before (the overlapped run loop's chains): the first step's guard, the last step's
head, and the step rows as arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any
from uuid import UUID

from agentckpt._backends.pg_arrays import (
    PgArray,
    bool_array,
    bytea_array,
    int8_array,
    text_array,
    uuid_array,
)
from agentckpt._core.writes import Row, StepWrite

__all__ = ["batch_params", "chain_landed", "chain_params", "chain_query", "chainable"]


def _step_rows(writes: Sequence[StepWrite]) -> dict[str, PgArray]:
    """The arrays of the step rows' own columns, a write an element."""
    return {
        "steps": int8_array([w.step for w in writes]),
        "parent_steps": int8_array([w.parent_step for w in writes]),
        "kinds": text_array([w.kind for w in writes]),
        "is_opens": bool_array([w.is_open for w in writes]),
        "codecs": text_array([w.codec for w in writes]),
        "payloads": bytea_array([w.payload for w in writes]),
        "state_versions": int8_array([w.state_version for w in writes]),
        "write_versions": int8_array([w.write_version for w in writes]),
        "raw_bytes": int8_array([w.raw_bytes for w in writes]),
        "state_bytes": int8_array([w.state_bytes for w in writes]),
        "checksums": bytea_array([w.checksum for w in writes]),
        "tokens": bytea_array([w.token for w in writes]),
    }


def batch_params(writes: Sequence[StepWrite]) -> dict[str, PgArray]:
    """The parameters of ``commit_steps`` for a batch of writes, each of another run."""
    blobs = [(w.run_id, b) for w in writes for b in w.blobs]
    history = [(w.run_id, h) for w in writes for h in w.history]
    return {
        **_step_rows(writes),
        "run_ids": uuid_array([w.run_id for w in writes]),
        "expected_steps": int8_array([w.expected_step for w in writes]),
        "expected_versions": int8_array([w.expected_version for w in writes]),
        "epochs": int8_array([w.epoch for w in writes]),
        "snapshot_steps": int8_array([w.snapshot_step for w in writes]),
        "chain_bytes": int8_array([w.chain_bytes for w in writes]),
        "prune_belows": int8_array([w.prune_below for w in writes]),
        "seal_steps": int8_array([w.seal_step for w in writes]),
        "metadatas": text_array([w.metadata for w in writes]),
        "blob_run_ids": uuid_array([run_id for run_id, _ in blobs]),
        "blob_digests": text_array([b.digest for _, b in blobs]),
        "blob_codecs": text_array([b.codec for _, b in blobs]),
        "blob_sizes": int8_array([b.size for _, b in blobs]),
        "blob_datas": bytea_array([b.data for _, b in blobs]),
        "history_run_ids": uuid_array([run_id for run_id, _ in history]),
        "history_seqs": int8_array([h.seq for _, h in history]),
        "history_counts": int8_array([h.item_count for _, h in history]),
        "history_codecs": text_array([h.codec for _, h in history]),
        "history_payloads": bytea_array([h.payload for _, h in history]),
        "history_raw_bytes": int8_array([h.raw_bytes for _, h in history]),
    }


def chainable(writes: Sequence[StepWrite]) -> bool:
    """``writes`` are one run's next steps that ``commit_chain`` writes as one statement:
    each guarded by the one before, under one epoch, carrying no blobs, history or
    metadata, and none after the first sealing a step."""
    first = writes[0]
    for before, write in pairwise(writes):
        if (
            write.run_id != first.run_id
            or write.epoch != first.epoch
            or write.expected_step != before.step
            or write.expected_version != before.write_version
            or write.seal_step is not None
        ):
            return False
    return not any(w.blobs or w.history or w.metadata is not None for w in writes)


def chain_query(writes: Sequence[StepWrite]) -> str:
    """The statement of a :func:`chainable` run's next steps: ``commit_chain_plain`` when
    they prune and seal nothing (most chains), else ``commit_chain``."""
    if writes[0].seal_step is None and all(w.prune_below is None for w in writes):
        return "commit_chain_plain"
    return "commit_chain"


def chain_params(writes: Sequence[StepWrite]) -> dict[str, Any]:
    """The parameters of ``commit_chain`` for a :func:`chainable` run's next steps."""
    first, last = writes[0], writes[-1]
    prunes = [w.prune_below for w in writes if w.prune_below is not None]
    return {
        "run_id": first.run_id,
        "expected_step": first.expected_step,
        "expected_version": first.expected_version,
        "epoch": first.epoch,
        "head_step": last.step,
        "head_version": last.write_version,
        "head_open": last.is_open,
        "snapshot_step": last.snapshot_step,
        "chain_bytes": last.chain_bytes,
        "prune_below": max(prunes) if prunes else None,
        "seal_step": first.seal_step,
        **_step_rows(writes),
    }


def chain_landed(
    writes: Sequence[StepWrite], rows: Sequence[Row]
) -> dict[tuple[UUID, int], tuple[datetime, datetime]]:
    """The landed steps of a ``commit_chain`` (its rows: the steps it inserted) by run
    and step; a step the chain's own snapshot pruned landed with it, at its time."""
    if not rows:
        return {}
    run_id = writes[0].run_id
    stamps = {row["step"]: (row["created_at"], row["updated_at"]) for row in rows}
    kept = min(stamps)
    return {
        (run_id, w.step): stamps.get(w.step, stamps[kept])
        for w in writes
        if w.step in stamps or w.step < kept
    }
