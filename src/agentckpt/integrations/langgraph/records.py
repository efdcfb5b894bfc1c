"""What the step index reads and writes: checkpoints named by a framework's own ids.

A framework such as LangGraph names each checkpoint with its own id inside a *thread*
(a conversation) and a *namespace* (a subgraph). agentckpt stores the checkpoints of one
thread and namespace as the steps of one run, so consecutive checkpoints become small
deltas, and keeps an index from the framework's ids to those steps
(``step_index_async.py``). This module holds the records that cross that boundary and
the few decisions that need no I/O; it imports no framework.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from agentckpt._core.blobs import BlobRef
from agentckpt._core.writes import BlobRow
from agentckpt.errors import InvalidValueError
from agentckpt.ops.kinds import pack_payload, unpack_payload
from agentckpt.tenancy import DEFAULT_TENANT

TASKS_CHANNEL = "__pregel_tasks"
"""LangGraph's tasks channel (``langgraph.checkpoint.serde.types.TASKS``; spelled here
because this module imports no framework): where the sends of a task go."""

__all__ = [
    "TASKS_CHANNEL",
    "BlobCache",
    "Entry",
    "IndexCodec",
    "IndexRow",
    "IndexedPut",
    "ListQuery",
    "PendingWrite",
    "check_text",
    "matches",
    "pack_payload",
    "thread_run_id",
    "unpack_payload",
]

# Fixed forever: the run that stores a thread and namespace must be the same in every
# process and every version of agentckpt.
_THREAD_NAMESPACE = uuid.UUID("3b0f6a52-8d7e-4c11-9f43-2a6f0c9e5d17")


def thread_run_id(thread_id: str, namespace: str, tenant: str = DEFAULT_TENANT) -> UUID:
    """The id of the run that stores the checkpoints of ``thread_id`` in ``namespace``
    for ``tenant``: two tenants' threads of the same id are two runs."""
    # NUL cannot occur in any part (check_text and tenant names refuse it), so the parts
    # are unambiguous; the default tenant keeps the ids threads had before tenants.
    if tenant == DEFAULT_TENANT:
        return uuid.uuid5(_THREAD_NAMESPACE, f"{thread_id}\x00{namespace}")
    return uuid.uuid5(_THREAD_NAMESPACE, f"{tenant}\x00{thread_id}\x00{namespace}")


def check_text(value: object, what: str) -> str:
    """``value`` as a string that a text column stores exactly; else InvalidValueError."""
    if type(value) is not str:
        raise InvalidValueError("", f"{what} must be a str, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidValueError("", f"{what} {value!r} contains U+0000, which text columns refuse")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValueError("", f"{what} {value!r} contains a lone surrogate") from None
    return value


@dataclass(frozen=True, slots=True)
class IndexedPut:
    """One checkpoint to store: its state (a JSON document) and how to find it again.

    ``state["id"]`` must equal ``checkpoint_id``: a load checks it, so an index row can
    never hand out another checkpoint's state. ``blobs`` are the large values the state
    refers to; they are written in the same transaction as the step.
    """

    thread_id: str
    namespace: str
    checkpoint_id: str
    parent_id: str | None
    state: dict[str, Any]
    metadata: str
    invocation_id: str | None = None
    blobs: tuple[BlobRow, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A write of a task against a checkpoint, serialized by the framework (``type``)."""

    task_id: str
    channel: str
    idx: int
    task_path: str
    type: str
    payload: bytes

    def sort_key(self) -> tuple[str, str, int]:
        """The order a framework applies the writes of one superstep in."""
        return (self.task_path, self.task_id, self.idx)


@dataclass(frozen=True, slots=True)
class IndexRow:
    """Where a named checkpoint is stored (without its state)."""

    run_id: UUID
    thread_id: str
    namespace: str
    checkpoint_id: str
    step: int
    parent_id: str | None
    metadata: str


@dataclass(frozen=True, slots=True)
class Entry:
    """A loaded checkpoint: the index row, the state, its blobs and its pending writes;
    ``sends``: its parent's writes to the tasks channel (what a pre-v4 checkpoint takes as
    that channel's value)."""

    row: IndexRow
    state: dict[str, Any]
    blobs: Mapping[str, bytes]
    writes: tuple[PendingWrite, ...]
    sends: tuple[PendingWrite, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListQuery:
    """Which checkpoints to list, newest (greatest id) first.

    ``thread_id=None`` lists every thread, ``namespace=None`` every namespace of the
    thread. ``filter`` keeps checkpoints whose decoded metadata has each key equal to
    the given value. ``before`` keeps ids below it; ``limit`` bounds the count.
    """

    thread_id: str | None = None
    namespace: str | None = None
    checkpoint_id: str | None = None
    before: str | None = None
    limit: int | None = None
    filter: Mapping[str, Any] | None = field(default=None)


class IndexCodec(Protocol):
    """What the index needs to know about the states and metadata it stores."""

    def blob_refs(self, state: Any) -> Iterable[BlobRef]:
        """The blobs a stored state refers to (fetched with it)."""
        ...

    def metadata(self, text: str) -> dict[str, Any]:
        """Decode a stored metadata text (for filtering)."""
        ...


_MISSING = object()


def matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """True if every key of ``wanted`` is in ``metadata`` with an equal value."""
    if not wanted:
        return True
    return all(metadata.get(key, _MISSING) == value for key, value in wanted.items())


class BlobCache:
    """Verified blob bytes by sha256, least recently used first out, bounded in bytes.

    Blobs are immutable (named by their digest), so a cached copy is never stale; the
    lock keeps the cache whole when several threads share one saver.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> bytes | None:
        """The cached bytes, or None."""
        with self._lock:
            data = self._items.get(digest)
            if data is not None:
                self._items.move_to_end(digest)
            return data

    def put(self, digest: str, data: bytes) -> None:
        """Remember ``data``; a blob larger than the whole budget is not kept."""
        if len(data) > self.max_bytes:
            return
        with self._lock:
            if digest in self._items:
                return
            self._items[digest] = data
            self._bytes += len(data)
            while self._bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._bytes -= len(old)
