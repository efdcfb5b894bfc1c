"""Checkpoints named by a framework's ids, kept as steps of runs (async source).

``step_index.py`` is generated from ``step_index_async.py`` by ``scripts/unasync.py``:
edit ``step_index_async.py``.

One run stores one thread and namespace: each checkpoint is a step of it (so consecutive
checkpoints are deltas), and the ``step_index`` table maps the framework's checkpoint id
to that step. The step is committed first and indexed second, and readers only see an
index row whose step exists, so a crash in between leaves nothing visible half-done. The
same ordering (run first, index rows second) makes deletes safe to interrupt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any
from uuid import UUID

import orjson

from agentckpt._core.blobs import BlobRef, decompress
from agentckpt._core.policy import SnapshotPolicy
from agentckpt._core.writes import BlobRow, Row
from agentckpt.crypto.sealing import BLOB
from agentckpt.errors import CorruptDataError, NotFoundError, RunNotFoundError, StaleHeadError
from agentckpt.integrations.langgraph import queries
from agentckpt.integrations.langgraph.records import (
    TASKS_CHANNEL,
    BlobCache,
    Entry,
    IndexCodec,
    IndexedPut,
    IndexRow,
    ListQuery,
    PendingWrite,
    matches,
    pack_payload,
    thread_run_id,
    unpack_payload,
)
from agentckpt.store.ride_out_async import ride_out_async
from agentckpt.store.store_async import AsyncStore

__all__ = ["AsyncStepIndex"]

# Commits retried after another writer moved the run on (a resumed process, a prune).
_ATTEMPTS = 8
# Index rows read per query when listing.
_PAGE = 64
# Blob bytes kept in memory per index: a thread's large messages are read on every resume.
_BLOB_CACHE_BYTES = 32 * 1024 * 1024


class AsyncStepIndex:
    """Named checkpoints of threads, stored on the runs of a store (:class:`AsyncStore`).

    ``kind`` is the kind of the runs it creates (one per thread and namespace). The
    store's snapshot policy must keep every step (``prune=False``): an index row points
    at a step, and pruning here happens only through :meth:`keep_latest`.
    """

    def __init__(self, store: AsyncStore, *, kind: str = "thread") -> None:
        self.store = store
        self.kind = kind
        self._blob_cache = BlobCache(_BLOB_CACHE_BYTES)

    # -- writing -----------------------------------------------------------------------

    async def put(self, put: IndexedPut) -> int:
        """Store a checkpoint; returns its step. Durable and visible when this returns."""
        rid = thread_run_id(put.thread_id, put.namespace, self.store.tenant)
        step = await self._commit(rid, put.thread_id, put.namespace, put.state, put.blobs)
        row = {
            "run_id": rid,
            "checkpoint_id": put.checkpoint_id,
            "step": step,
            "parent_id": put.parent_id,
            "invocation_id": put.invocation_id,
            "metadata": put.metadata,
        }
        # An upsert: repeating it after an outage is harmless.
        await ride_out_async(
            self.store.outage,
            lambda: self.store.backend.write(queries.INDEX_PUT, row),
            what=f"thread {put.thread_id!r}",
        )
        return step

    async def put_writes(
        self,
        thread_id: str,
        namespace: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        *,
        replace: bool,
    ) -> None:
        """Store a task's writes against a checkpoint, in one transaction.

        Without ``replace`` a write already stored under (task, idx) is kept as it is.
        """
        if not writes:
            return
        rid = thread_run_id(thread_id, namespace, self.store.tenant)
        params = []
        for write in writes:
            codec, payload = pack_payload(write.payload)
            params.append(
                {
                    "run_id": rid,
                    "checkpoint_id": checkpoint_id,
                    "task_id": write.task_id,
                    "idx": write.idx,
                    "channel": write.channel,
                    "task_path": write.task_path,
                    "type": write.type,
                    "codec": codec,
                    "payload": payload,
                }
            )
        name = queries.WRITES_REPLACE if replace else queries.WRITES_INSERT

        async def send() -> None:
            # Both statements are idempotent upserts: repeating them after an outage is
            # harmless.
            try:
                await self.store.backend.write_many(name, params)
            except RunNotFoundError:
                # Writes can come before the namespace's first checkpoint (a subgraph's
                # tasks): open its run, which they reference, and write them again.
                await self._open_run(rid, thread_id, namespace)
                await self.store.backend.write_many(name, params)

        await ride_out_async(self.store.outage, send, what=f"thread {thread_id!r}")

    async def _commit(
        self,
        rid: UUID,
        thread_id: str,
        namespace: str,
        state: dict[str, Any],
        blobs: Sequence[BlobRow],
    ) -> int:
        attempt = 0
        while True:
            attempt += 1
            try:
                # A commit repeated with the same state after an outage is the same
                # commit (the store recognises one that landed).
                info = await ride_out_async(
                    self.store.outage,
                    lambda: self.store.commit(rid, state, blobs=blobs),
                    what=f"thread {thread_id!r}",
                )
                return info.step
            except RunNotFoundError:
                if attempt >= _ATTEMPTS:
                    raise
                await self._open_run(rid, thread_id, namespace)
            except StaleHeadError:
                # Another writer moved the run on; the store re-reads the head next time.
                if attempt >= _ATTEMPTS:
                    raise

    async def _open_run(self, rid: UUID, thread_id: str, namespace: str) -> None:
        # The run first: its thread record references it. A crash in between leaves a
        # run with no step and no record, which the next put to this thread completes.
        await self.store.create_run(
            rid,
            kind=self.kind,
            metadata={"thread_id": thread_id, "namespace": namespace},
            exist_ok=True,
        )
        await self.store.backend.write(
            queries.OPEN_RUN, {"run_id": rid, "thread_id": thread_id, "namespace": namespace}
        )

    # -- reading -----------------------------------------------------------------------

    async def get(
        self, thread_id: str, namespace: str, checkpoint_id: str | None, codec: IndexCodec
    ) -> Entry | None:
        """One checkpoint (the latest when ``checkpoint_id`` is None), or None."""
        rid = thread_run_id(thread_id, namespace, self.store.tenant)

        async def read() -> Entry | None:
            if checkpoint_id is None:
                rows = await self.store.backend.read(queries.INDEX_LATEST, {"run_id": rid})
            else:
                rows = await self.store.backend.read(
                    queries.INDEX_GET, {"run_id": rid, "checkpoint_id": checkpoint_id}
                )
            if not rows:
                return None
            return await self._load(_index_row(rows[0], thread_id, namespace), codec)

        return await ride_out_async(self.store.outage, read, what=f"thread {thread_id!r}")

    async def entries(self, query: ListQuery, codec: IndexCodec) -> AsyncIterator[Entry]:
        """The checkpoints ``query`` selects, newest first, loaded page by page."""
        remaining = query.limit
        if remaining is not None and remaining <= 0:
            return
        if query.checkpoint_id and query.thread_id is not None and query.namespace is not None:
            # One named checkpoint: a key lookup, not a scan of the thread.
            named = await self.get(query.thread_id, query.namespace, query.checkpoint_id, codec)
            if named is not None and _selected(named.row, query, codec):
                yield named
            return
        # Without a filter, a page of ``limit`` rows is all that will be yielded.
        page = _PAGE if query.filter or remaining is None else min(remaining, _PAGE)
        after: IndexRow | None = None
        while True:
            rows = await self._page(query, after, page)
            for row in rows:
                if query.checkpoint_id is not None and row.checkpoint_id != query.checkpoint_id:
                    continue
                if query.namespace is not None and row.namespace != query.namespace:
                    continue
                if query.filter and not matches(codec.metadata(row.metadata), query.filter):
                    continue
                entry = await self._load(row, codec)
                if entry is None:
                    continue
                yield entry
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return
            if len(rows) < page:
                return
            after = rows[-1]

    async def thread_checkpoints(self, thread_id: str) -> dict[str, set[str]]:
        """The ids of the thread's visible checkpoints, by namespace (no state is read)."""
        found: dict[str, set[str]] = {}
        for rid, namespace in await self._thread_runs(thread_id):
            rows = await self.store.backend.read(queries.INDEX_ALL, {"run_id": rid})
            if rows:
                found[namespace] = {row["checkpoint_id"] for row in rows}
        return found

    async def _page(self, query: ListQuery, after: IndexRow | None, page: int) -> list[IndexRow]:
        if query.thread_id is not None and query.namespace is not None:
            rid = thread_run_id(query.thread_id, query.namespace, self.store.tenant)
            below = after.checkpoint_id if after is not None else query.before
            rows = await self.store.backend.read(
                queries.INDEX_PAGE_RUN, {"run_id": rid, "below": below, "page": page}
            )
            return [_index_row(r, query.thread_id, query.namespace) for r in rows]
        rows = await self.store.backend.read(
            queries.INDEX_PAGE,
            {
                "thread_id": query.thread_id,
                "before": query.before,
                "after_id": after.checkpoint_id if after is not None else None,
                "after_run": after.run_id if after is not None else None,
                "page": page,
            },
        )
        return [_index_row(r, r["thread_id"], r["namespace"]) for r in rows]

    async def _load(self, row: IndexRow, codec: IndexCodec) -> Entry | None:
        try:
            checkpoint = await self.store.state_at(row.run_id, row.step)
        except NotFoundError:
            return None  # deleted or pruned since its index row was read
        state = checkpoint.state
        if type(state) is not dict or state.get("id") != row.checkpoint_id:
            raise CorruptDataError(
                f"run {row.run_id} step {row.step} does not hold checkpoint "
                f"{row.checkpoint_id!r} of thread {row.thread_id!r} that the index points to"
            )
        blobs = await self._blobs(row.run_id, codec.blob_refs(state))
        writes, sends = await self._writes(row.run_id, row.checkpoint_id, row.parent_id)
        return Entry(row=row, state=state, blobs=blobs, writes=writes, sends=sends)

    async def _blobs(self, rid: UUID, refs: Iterable[BlobRef]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        wanted: list[str] = []
        for ref in refs:
            data = self._blob_cache.get(ref.digest)
            if data is not None:
                found[ref.digest] = data
            elif ref.digest not in wanted:
                wanted.append(ref.digest)
        if not wanted:
            return found
        rows = await self.store.open_rows(
            BLOB,
            await self.store.backend.read(
                queries.BLOBS_GET, {"run_id": rid, "digests": orjson.dumps(wanted).decode()}
            ),
            run_id=rid,
            column="data",
        )
        by_digest = {row["digest"]: row for row in rows}
        for digest in wanted:
            row = by_digest.get(digest)
            if row is None:
                raise CorruptDataError(f"run {rid}: blob {digest} of a checkpoint is missing")
            data = decompress(row["codec"], bytes(row["data"]), digest=digest, where=f"run {rid}")
            self._blob_cache.put(digest, data)
            found[digest] = data
        return found

    async def _writes(
        self, rid: UUID, checkpoint_id: str, parent_id: str | None = None
    ) -> tuple[tuple[PendingWrite, ...], tuple[PendingWrite, ...]]:
        """The checkpoint's pending writes, and its parent's writes to the tasks channel
        (none without a parent), each in the order a framework applies them."""
        rows = await self.store.backend.read(
            queries.WRITES_GET,
            {
                "run_id": rid,
                "checkpoint_id": checkpoint_id,
                "sends_of": parent_id,
                "sends_channel": TASKS_CHANNEL,
            },
        )
        where = f"run {rid} checkpoint {checkpoint_id!r}"
        own: list[PendingWrite] = []
        sends: list[PendingWrite] = []
        for row in rows:
            write = PendingWrite(
                task_id=row["task_id"],
                channel=row["channel"],
                idx=row["idx"],
                task_path=row["task_path"],
                type=row["type"],
                payload=unpack_payload(row["codec"], bytes(row["payload"]), where=where),
            )
            (own if row["checkpoint_id"] == checkpoint_id else sends).append(write)
        # In Python, not SQL: the order must be code point order whatever the collation.
        own.sort(key=PendingWrite.sort_key)
        sends.sort(key=PendingWrite.sort_key)
        return tuple(own), tuple(sends)

    # -- deleting, copying, pruning --------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in every namespace."""
        for rid, _ in await self._thread_runs(thread_id):
            await self.store.delete_run(rid)

    async def delete_invocations(self, invocation_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that these invocations wrote.

        A run left with no checkpoint is deleted whole. Otherwise its steps stay: later
        steps are deltas against them. They are unreachable and go with the thread, or
        with :meth:`keep_latest`.
        """
        if not invocation_ids:
            return
        rows = await self.store.backend.write(
            queries.DELETE_INVOCATIONS, {"ids": orjson.dumps(list(invocation_ids)).decode()}
        )
        for rid in dict.fromkeys(row["run_id"] for row in rows):
            if not await self.store.backend.read(queries.RUN_INDEXED, {"run_id": rid}):
                await self.store.delete_run(rid)

    async def copy_thread(self, source: str, target: str) -> None:
        """Copy every checkpoint and write of ``source`` into ``target``.

        Each namespace's copies become visible together, once all are stored.
        """
        if source == target:
            return
        for src, namespace in await self._thread_runs(source):
            rows = await self.store.backend.read(queries.INDEX_ALL, {"run_id": src})
            if not rows:
                continue
            dst = thread_run_id(target, namespace, self.store.tenant)
            await self._open_run(dst, target, namespace)
            await self.store.copy_blobs(src, dst)
            placed = []
            for row in rows:
                state = (await self.store.state_at(src, row["step"])).state
                step = await self._commit(dst, target, namespace, state, ())
                placed.append(
                    {
                        "run_id": dst,
                        "checkpoint_id": row["checkpoint_id"],
                        "step": step,
                        "parent_id": row["parent_id"],
                        "invocation_id": row["invocation_id"],
                        "metadata": row["metadata"],
                    }
                )
            # Writes before index rows: a checkpoint never shows without its writes.
            await self.store.backend.write(
                queries.COPY_WRITES, {"from_run_id": src, "to_run_id": dst}
            )
            await self.store.backend.write_many(queries.INDEX_PUT, placed)

    async def keep_latest(
        self, thread_ids: Sequence[str], refuse: Callable[[Sequence[IndexRow]], None]
    ) -> None:
        """Keep only the latest checkpoint (greatest id) of each namespace of the threads.

        ``refuse`` sees every checkpoint of the threads first and may raise to prune
        nothing. The kept checkpoint is stored again as a snapshot when it is a delta, its
        parent link is cleared (the parent is gone), and every older step is deleted.
        Each step is safe to interrupt: a rerun finishes the job.
        """
        plans: list[tuple[UUID, list[Row]]] = []
        seen: list[IndexRow] = []
        for thread_id in thread_ids:
            for rid, namespace in await self._thread_runs(thread_id):
                rows = await self.store.backend.read(queries.INDEX_ALL, {"run_id": rid})
                plans.append((rid, rows))
                seen.extend(_index_row(row, thread_id, namespace) for row in rows)
        refuse(seen)
        for rid, rows in plans:
            if not rows:
                continue
            latest = max(rows, key=lambda row: str(row["checkpoint_id"]))
            step = int(latest["step"])
            if latest["kind"] != "snapshot":
                step = await self._snapshot(rid, step)
            await self.store.backend.write(
                queries.KEEP_ONLY,
                {"run_id": rid, "checkpoint_id": latest["checkpoint_id"], "step": step},
            )
            # The kept step is a snapshot: nothing at or after it needs an older step.
            await self.store.prune(rid, below=step)

    async def _snapshot(self, rid: UUID, step: int) -> int:
        """Store the state of ``step`` again as a new snapshot step; returns its number."""
        state = (await self.store.state_at(rid, step)).state
        snapshots = AsyncStore(
            self.store.backend,
            policy=SnapshotPolicy(interval=1, prune=False),
            limits=self.store.limits,
            migrations=self.store.migrations,
            verify=self.store.verify,
        )
        attempt = 0
        while True:
            attempt += 1
            try:
                return (await snapshots.commit(rid, state)).step
            except StaleHeadError:
                if attempt >= _ATTEMPTS:
                    raise

    async def _thread_runs(self, thread_id: str) -> list[tuple[UUID, str]]:
        rows = await self.store.backend.read(queries.THREAD_RUNS, {"thread_id": thread_id})
        return [(row["run_id"], row["namespace"]) for row in rows]


def _selected(row: IndexRow, query: ListQuery, codec: IndexCodec) -> bool:
    return (query.before is None or row.checkpoint_id < query.before) and matches(
        codec.metadata(row.metadata), query.filter
    )


def _index_row(row: Row, thread_id: str, namespace: str) -> IndexRow:
    return IndexRow(
        run_id=row["run_id"],
        thread_id=thread_id,
        namespace=namespace,
        checkpoint_id=row["checkpoint_id"],
        step=int(row["step"]),
        parent_id=row["parent_id"],
        metadata=row["metadata"],
    )
