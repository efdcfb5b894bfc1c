"""Large values of a run's states: stored as blobs before the commit, loaded lazily.

``artifacts.py`` is generated from ``artifacts_async.py`` by ``scripts/unasync.py``:
edit ``artifacts_async.py``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from agentckpt._core.blobs import BlobRef, db_uri, decompress, is_ref
from agentckpt._core.writes import BlobRow
from agentckpt.blobstores.base import AsyncBlobIO, BlobStore
from agentckpt.crypto.keyring import UnknownDataKey
from agentckpt.errors import ConfigurationError
from agentckpt.runs.offload import TEXT, OffloadPolicy, PendingBlob, blob_type, offload
from agentckpt.store.store_async import AsyncStore

__all__ = ["AsyncArtifacts"]

# Loaded blobs kept in memory, so a step that reads the same document twice (or the next
# step) does not fetch it again. Bounded by bytes, not count: blobs are large by nature.
_CACHE_BYTES = 64 * 1024 * 1024


class AsyncArtifacts:
    """Moves a run's large values to its blob store and loads them back, verified.

    ``blobs=None`` keeps blobs in the database: their rows are returned by
    :meth:`persist` and committed in the same transaction as the step. Any other store
    gets each blob durably before :meth:`persist` returns, so the step that references
    it commits only after the blob exists.
    """

    def __init__(
        self, store: AsyncStore, run_id: UUID, blobs: BlobStore | None, policy: OffloadPolicy
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.policy = policy
        self._io = AsyncBlobIO(blobs, sealing=store.sealing) if blobs is not None else None
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = 0

    def uri_for(self, digest: str) -> str:
        """Where this run's blob ``digest`` lives."""
        if self._io is None:
            return db_uri(digest)
        return self._io.uri_for(self.run_id, digest)

    def prepare(
        self,
        state: Any,
        changed: list[Any] | None = None,
        encodings: list[bytes] | None = None,
    ) -> tuple[Any, list[PendingBlob]]:
        """The state to commit (large values replaced by references) and its new blobs;
        ``changed`` and ``encodings``: see :func:`~agentckpt.runs.offload.offload`."""
        return offload(
            state,
            self.policy,
            self.uri_for,
            changed=changed,
            encodings=encodings,
            max_depth=self.store.limits.max_depth,
            max_bytes=self.store.limits.max_bytes,
        )

    async def persist(self, pending: Iterable[PendingBlob], known: set[str]) -> list[BlobRow]:
        """Make the pending blobs durable; rows to commit with the step (database store).

        Blobs whose URI is in ``known`` are referenced by the run's current head, which
        is kept, so they are neither rewritten nor at risk from garbage collection.
        """
        fresh = [blob for blob in pending if blob.uri not in known]
        if self._io is None:
            return [BlobRow(b.digest, b.codec, b.size, b.data) for b in fresh]
        for blob in fresh:
            await self._io.put(self.run_id, blob.digest, blob.data)
        return []

    async def load(self, value: Any) -> Any:
        """Resolve a blob reference to its ``str`` or ``bytes``; other values pass through.

        The content is checked against the reference's sha256
        (:class:`~agentckpt.CorruptDataError` if it does not match).
        """
        if not is_ref(value):
            return value
        ref = BlobRef.from_json(value)
        data = self._cache.get(ref.digest)
        if data is None:
            data = await self._fetch(ref)
            self._remember(ref.digest, data)
        else:
            self._cache.move_to_end(ref.digest)
        return data.decode("utf-8") if blob_type(value) == TEXT else data

    async def _fetch(self, ref: BlobRef) -> bytes:
        """The blob's bytes, verified against its sha256, from wherever the ref says."""
        if ref.uri.startswith("db:"):
            return await self.store.get_blob(self.run_id, ref)
        if self._io is None:
            raise ConfigurationError(
                f"run {self.run_id}: blob {ref.uri} is outside the database; pass the blob "
                "store that holds it (blobs=...)"
            )
        try:
            stored = await self._io.get(ref.uri)
        except UnknownDataKey:  # sealed under a data key another process made since
            await self.store.refresh_keys()
            stored = await self._io.get(ref.uri)
        return decompress(ref.codec, stored, digest=ref.digest, where=f"run {self.run_id}")

    def _remember(self, digest: str, data: bytes) -> None:
        if len(data) > _CACHE_BYTES:
            return
        self._cache[digest] = data
        self._cached_bytes += len(data)
        while self._cached_bytes > _CACHE_BYTES:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)
