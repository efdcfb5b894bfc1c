# GENERATED from blob_gc_async.py by scripts/unasync.py; do not edit.
"""Blob garbage collection: remove blobs that no kept step references any more.

``blob_gc.py`` is generated from ``blob_gc_async.py`` by ``scripts/unasync.py``:
edit ``blob_gc_async.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from uuid import UUID

import orjson

from agentckpt.blobstores.base import BlobIO, BlobStore, StoredBlob
from agentckpt.crypto.sealing import STEP
from agentckpt.errors import ConfigurationError
from agentckpt.runs import queries
from agentckpt.runs.blob_refs import BlobGcReport, DeletedBlob, step_refs
from agentckpt.store.store import RunId, Store, as_run_id

__all__ = ["gc_blobs"]


def _all_runs(store: Store, page_size: int) -> Iterator[UUID]:
    after: UUID | None = None
    while True:
        rows = store.backend.read(queries.GC_RUN_PAGE, {"after": after, "limit": page_size})
        for row in rows:
            yield row["run_id"]
        if len(rows) < page_size:
            return
        after = rows[-1]["run_id"]


def gc_blobs(
    store: Store,
    blobs: BlobStore | None = None,
    *,
    grace: float = 3600.0,
    runs: Iterable[RunId] | None = None,
    now: datetime | None = None,
    page_size: int = 100,
) -> BlobGcReport:
    """Delete blobs that no kept step of any run references and that are older than ``grace``.

    Blob rows in the database are always collected; pass ``blobs`` to collect an
    external store (files, S3) too. ``runs`` limits what is deleted to those runs'
    blobs (references are still gathered from every run, since a forked run may point
    at its parent's blobs).

    Never while referenced: a blob row is deleted only in a statement that checks the
    run's head is still the one whose steps were scanned (a commit in between makes it
    delete nothing). The grace period covers what a scan cannot see: a blob written for
    a commit still in flight. Make ``grace`` longer than the longest time between a
    worker writing a blob and committing the step that references it (the default hour
    is generous); writers refresh a blob's time when they write it again, and external
    blobs are re-checked right before deletion.

    ``now`` overrides the external store's clock (which dates its blobs); the database
    blobs are dated by the database clock.
    """
    if not grace >= 0:
        raise ConfigurationError(f"grace must be a number of seconds >= 0, got {grace!r}")
    io = BlobIO(blobs) if blobs is not None else None
    # Fixed before the scan: a blob written after this moment is never deleted by this
    # pass, whatever the scan missed.
    cutoff: datetime | None = None
    if io is not None:
        cutoff = (now if now is not None else io.now()) - timedelta(seconds=grace)
    selected = {as_run_id(r) for r in runs} if runs is not None else None
    report = BlobGcReport()
    referenced_uris: set[str] = set()

    for run_id in _all_runs(store, page_size):
        rows = store.open_rows(
            STEP, store.backend.read(queries.GC_RUN_PAYLOADS, {"run_id": run_id})
        )
        if not rows:
            continue  # deleted since the page was read
        in_database, external = step_refs(run_id, rows)
        referenced_uris |= external
        report.runs_scanned += 1
        report.referenced += len(in_database)
        if selected is not None and run_id not in selected:
            continue
        deleted = store.backend.write(
            queries.GC_DELETE_BLOBS,
            {
                "run_id": run_id,
                "head_step": rows[0]["head_step"],
                "head_version": rows[0]["head_version"],
                "grace": float(grace),
                "keep": orjson.dumps(sorted(in_database)).decode(),
            },
        )
        report.deleted.extend(
            DeletedBlob(run_id, f"db:sha256:{row['digest']}", row["stored_bytes"])
            for row in deleted
        )
    report.referenced += len(referenced_uris)

    if io is None or cutoff is None:
        return report
    listing: list[StoredBlob] = []
    if selected is None:
        listing = io.list(None)
    else:
        for run_id in sorted(selected):
            listing.extend(io.list(run_id))
    for blob in listing:
        if blob.uri in referenced_uris:
            continue
        if blob.modified_at > cutoff:
            report.kept_recent += 1
            continue
        if io.delete(blob.uri, unless_modified_after=cutoff):
            report.deleted.append(DeletedBlob(blob.run_id, blob.uri, blob.stored_bytes))
    return report
