"""Blob garbage collection, the pure part: which blobs the kept steps still reference.

A blob is referenced while the state of any kept step of any run holds a reference to
it. The kept steps are replayed in order (each snapshot, then its deltas applied), and
references are gathered from every snapshot and from every place a delta writes to: the
values it adds or replaces, and the object it writes into when that object is a
reference (a delta may turn one reference into another by replacing only its ``$blob``
and ``uri`` fields). Every reference of every kept state is found this way, without
walking each whole state at each step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt._core.codec import decode
from agentckpt._core.compression import unpack
from agentckpt._core.delta import apply
from agentckpt.errors import CorruptDataError
from agentckpt.runs.offload import refs_in

__all__ = ["BlobGcReport", "DeletedBlob", "step_refs"]


@dataclass(frozen=True, slots=True)
class DeletedBlob:
    """A blob that garbage collection removed."""

    run_id: UUID | None
    uri: str
    stored_bytes: int


@dataclass(slots=True)
class BlobGcReport:
    """What :func:`~agentckpt.runs.gc_blobs` did.

    ``referenced`` counts the distinct blobs that kept steps reference (per run for blobs
    in the database). ``kept_recent`` counts unreferenced blobs in an external store that
    were spared because they are younger than the grace period.
    """

    runs_scanned: int = 0
    referenced: int = 0
    kept_recent: int = 0
    deleted: list[DeletedBlob] = field(default_factory=list)

    @property
    def deleted_bytes(self) -> int:
        """Stored bytes freed."""
        return sum(blob.stored_bytes for blob in self.deleted)


def _parent(document: Any, path: str) -> Any:
    """The container that the JSON Pointer ``path`` writes into, or None."""
    if not path:
        return None
    node = document
    for token in path.split("/")[1:-1]:
        token = token.replace("~1", "/").replace("~0", "~")
        if type(node) is dict:
            node = node.get(token)
        elif type(node) is list and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def step_refs(run_id: UUID, rows: Iterable[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """``(digests of database blobs, URIs of external blobs)`` referenced by these steps.

    ``rows`` are a run's kept steps in order, with ``step``, ``kind``, ``codec`` and
    ``payload`` (``step`` None: a run with no step).
    """
    in_database: set[str] = set()
    external: set[str] = set()

    def found(value: Any) -> None:
        ref = BlobRef.from_json(value)
        if ref.uri.startswith("db:"):
            in_database.add(ref.digest)
        else:
            external.add(ref.uri)

    state: Any = None
    started = False
    for row in rows:
        if row["step"] is None:
            continue
        where = f"run {run_id} step {row['step']}"
        document = decode(unpack(row["codec"], bytes(row["payload"]), where=where))
        if row["kind"] == "snapshot":
            state, started = document, True
            for value in refs_in(state):
                found(value)
            continue
        if not started:
            raise CorruptDataError(f"{where}: a delta with no snapshot before it")
        try:
            state = apply(state, document, in_place=True)
        except ValueError as exc:
            raise CorruptDataError(f"{where}: delta does not apply: {exc}") from exc
        for op in document:
            if op.get("op") not in ("add", "replace"):
                continue
            for value in refs_in(op.get("value")):
                found(value)
            parent = _parent(state, op["path"])
            if is_ref(parent):
                found(parent)
    return in_database, external
