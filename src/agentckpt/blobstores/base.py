"""The interface of a blob store outside the database, and how the run loop calls it.

A blob store keeps the stored (compressed) bytes of large values, one object per
``(run_id, sha256)``. The run loop writes a blob before it commits the step that
references it, so a committed step never points at a missing blob. The database itself
is the default store and needs no object here (its blob rows ride in the step's
transaction); this interface is for stores outside it: :class:`LocalBlobStore` and
:class:`S3BlobStore`.

Stores are synchronous (their I/O is files and HTTP); :class:`AsyncBlobIO` runs each
call in a worker thread so the event loop never blocks on them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from agentckpt.crypto.sealing import BLOB, Sealing

__all__ = ["AsyncBlobIO", "BlobIO", "BlobStore", "StoredBlob"]


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """One object found in a blob store.

    ``digest`` is ``""`` for leftovers of writes that never finished (temp files),
    which garbage collection removes once they are older than its grace period.
    ``modified_at`` is on the store's own clock (see :meth:`BlobStore.now`).
    """

    uri: str
    run_id: UUID | None
    digest: str
    stored_bytes: int
    modified_at: datetime


class BlobStore(Protocol):
    """Where blobs live when not in the database.

    Implementations must make :meth:`put` durable before returning and must refresh the
    object's modification time when it already exists: garbage collection spares blobs
    modified within its grace period, and a blob about to be referenced again must count
    as fresh.
    """

    def uri_for(self, run_id: UUID, digest: str) -> str:
        """The URI under which the blob ``digest`` of ``run_id`` is (or will be) stored."""
        ...

    def put(self, run_id: UUID, digest: str, data: bytes) -> str:
        """Store ``data`` durably (or refresh an existing copy); return its URI."""
        ...

    def get(self, uri: str) -> bytes:
        """The stored bytes; :class:`~agentckpt.NotFoundError` if there are none."""
        ...

    def list(self, run_id: UUID | None = None) -> Iterator[StoredBlob]:
        """Every stored object (of one run, or of all runs)."""
        ...

    def delete(self, uri: str, *, unless_modified_after: datetime) -> bool:
        """Delete the object unless it changed after the cutoff; True if it was deleted."""
        ...

    def now(self) -> datetime:
        """The current time on the clock that stamps ``modified_at``."""
        ...


class BlobIO:
    """Calls a :class:`BlobStore` directly (the sync run loop).

    ``sealing`` (the store's, :attr:`agentckpt.Store.sealing`) encrypts what is put and
    decrypts what is got, so the blob store only ever holds sealed bytes.
    """

    def __init__(self, store: BlobStore, *, sealing: Sealing | None = None) -> None:
        self.store = store
        self.sealing = sealing or Sealing()

    def uri_for(self, run_id: UUID, digest: str) -> str:
        """See :meth:`BlobStore.uri_for`."""
        return self.store.uri_for(run_id, digest)

    def put(self, run_id: UUID, digest: str, data: bytes) -> str:
        """See :meth:`BlobStore.put`."""
        return self.store.put(run_id, digest, self.sealing.seal_bytes(BLOB, data))

    def get(self, uri: str) -> bytes:
        """See :meth:`BlobStore.get`."""
        return self.sealing.open_bytes(BLOB, self.store.get(uri), where=uri)

    def list(self, run_id: UUID | None = None) -> list[StoredBlob]:
        """See :meth:`BlobStore.list`."""
        return list(self.store.list(run_id))

    def delete(self, uri: str, *, unless_modified_after: datetime) -> bool:
        """See :meth:`BlobStore.delete`."""
        return self.store.delete(uri, unless_modified_after=unless_modified_after)

    def now(self) -> datetime:
        """See :meth:`BlobStore.now`."""
        return self.store.now()


class AsyncBlobIO:
    """Calls a :class:`BlobStore` in a worker thread (the async run loop); ``sealing``
    as for :class:`BlobIO`."""

    def __init__(self, store: BlobStore, *, sealing: Sealing | None = None) -> None:
        self.store = store
        self.sealing = sealing or Sealing()

    def uri_for(self, run_id: UUID, digest: str) -> str:
        """See :meth:`BlobStore.uri_for` (pure, so called directly)."""
        return self.store.uri_for(run_id, digest)

    async def put(self, run_id: UUID, digest: str, data: bytes) -> str:
        """See :meth:`BlobStore.put`."""
        sealed = self.sealing.seal_bytes(BLOB, data)
        return await asyncio.to_thread(self.store.put, run_id, digest, sealed)

    async def get(self, uri: str) -> bytes:
        """See :meth:`BlobStore.get`."""
        stored = await asyncio.to_thread(self.store.get, uri)
        return self.sealing.open_bytes(BLOB, stored, where=uri)

    async def list(self, run_id: UUID | None = None) -> list[StoredBlob]:
        """See :meth:`BlobStore.list`."""
        return await asyncio.to_thread(lambda: list(self.store.list(run_id)))

    async def delete(self, uri: str, *, unless_modified_after: datetime) -> bool:
        """See :meth:`BlobStore.delete`."""
        return await asyncio.to_thread(
            lambda: self.store.delete(uri, unless_modified_after=unless_modified_after)
        )

    async def now(self) -> datetime:
        """See :meth:`BlobStore.now`."""
        return await asyncio.to_thread(self.store.now)
