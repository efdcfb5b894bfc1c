"""Baseline (d), the batched floor: the floor's bare insert, group-committed.

The same new bytes as the floor (b) (each message's JSON; each step's changed keys), sent
the way agentckpt's group commit sends commits: a write that finds the queue empty and a
sender free goes at once, alone; writes that queue while every sender is busy go
together, in queue order, at most ``group_commit`` writes and about 8 MiB per batch, one
statement and one transaction per batch; ``commit_senders`` batches in flight at most on
PostgreSQL, one on SQLite (one writer). The limits are agentckpt's defaults, imported from
its group commit, so the two stay the same. This is the honest limit for grouped writes:
the least a store can pay to make the new bytes durable when it groups them.

PostgreSQL: one ``INSERT ... SELECT FROM unnest(...)`` per batch on an autocommit
connection of the pool. SQLite: ``BEGIN IMMEDIATE``, one ``executemany``, ``COMMIT``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentckpt._backends.options import CommitOptions
from agentckpt._compat.group_commit import MAX_BYTES
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.subjects.connections import AsyncSqlite, PgDatabase, open_database
from agentckpt.bench.subjects.floor import FloorConversations, FloorRun, floor_ddl

__all__ = ["BatchedFloor", "Batcher"]

_PG_BATCH = (
    "INSERT INTO floor_writes (conversation_id, seq, payload) "
    "SELECT * FROM unnest(%s::uuid[], %s::integer[], %s::bytea[])"
)
_SQLITE_INSERT = "INSERT INTO floor_writes (conversation_id, seq, payload) VALUES (?, ?, ?)"

Row = tuple[uuid.UUID, int, bytes]


@dataclass(slots=True)
class _Waiter:
    row: Row
    done: asyncio.Future[None]


class Batcher:
    """Group commit of bare inserts: agentckpt's policy, without agentckpt."""

    def __init__(
        self,
        send: Callable[[Sequence[Row]], Awaitable[None]],
        *,
        senders: int,
        max_writes: int,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._send = send
        self._senders = max(senders, 1)
        self._max_writes = max(max_writes, 1)
        self._max_bytes = max_bytes
        self._queue: deque[_Waiter] = deque()
        self._active = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0

    async def insert(self, row: Row) -> None:
        """Make ``row`` durable, alone or in a batch with rows queued meanwhile."""
        if not self._queue and self._active < self._senders:
            self._active += 1
            try:
                self.batches += 1
                await self._send([row])
            finally:
                self._active -= 1
                self._spawn()  # rows queued behind this one while every sender was busy
            return
        waiter = _Waiter(row, asyncio.get_running_loop().create_future())
        self._queue.append(waiter)
        self._spawn()
        await waiter.done

    def _spawn(self) -> None:
        if self._queue and self._active < self._senders:
            self._active += 1
            task = asyncio.get_running_loop().create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take(self) -> list[_Waiter]:
        batch: list[_Waiter] = []
        size = 0
        while self._queue and len(batch) < self._max_writes:
            waiter = self._queue[0]
            if batch and size + len(waiter.row[2]) > self._max_bytes:
                break
            batch.append(self._queue.popleft())
            size += len(waiter.row[2])
        return batch

    async def _drain(self) -> None:
        try:
            while batch := self._take():
                self.batches += 1
                try:
                    await self._send([w.row for w in batch])
                except Exception as exc:  # the batch's transaction failed: tell every writer
                    for waiter in batch:
                        if not waiter.done.done():
                            waiter.done.set_exception(exc)
                    continue
                for waiter in batch:
                    if not waiter.done.done():
                        waiter.done.set_result(None)
        finally:
            self._active -= 1


def _pg_sender(db: PgDatabase) -> Callable[[Sequence[Row]], Awaitable[None]]:
    async def send(rows: Sequence[Row]) -> None:
        ids, seqs, payloads = zip(*rows, strict=True)
        await db.execute(_PG_BATCH, (list(ids), list(seqs), list(payloads)))

    return send


def _sqlite_sender(db: AsyncSqlite) -> Callable[[Sequence[Row]], Awaitable[None]]:
    def write(rows: Sequence[Row]) -> None:
        conn = db.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(_SQLITE_INSERT, [(str(k), s, p) for k, s, p in rows])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    async def send(rows: Sequence[Row]) -> None:
        await db.call(lambda: write(rows))

    return send


class _Batched:
    """Routes the floor's inserts through a :class:`Batcher`."""

    batcher: Batcher

    async def insert(self, key: uuid.UUID, seq: int, payload: bytes) -> None:
        await self.batcher.insert((key, seq, payload))


class BatchedConversations(_Batched, FloorConversations):
    """The floor's conversation writes, group-committed."""


class BatchedRun(_Batched, FloorRun):
    """The floor's long run, group-committed (a lone run: every step goes alone)."""


class BatchedFloor:
    """Subject (d): the batched floor, with agentckpt's default batch limits and senders."""

    name = "batched"

    def __init__(self, commit: CommitOptions | None = None) -> None:
        self.commit = commit or CommitOptions()

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(d) batched-floor"

    def unavailable(self, dialect: str) -> str | None:
        """Always available."""
        return None

    def senders(self, dialect: str) -> int:
        """Batches in flight at most: ``commit_senders``, or 1 on SQLite (one writer)."""
        return self.commit.commit_senders if dialect == "postgresql" else 1

    async def _open(self, place: Place, subject: type[_Batched]) -> Any:
        db = await open_database(place)
        await db.script(floor_ddl(place.dialect))
        if isinstance(db, PgDatabase):
            send = _pg_sender(db)
        else:
            assert isinstance(db, AsyncSqlite)
            send = _sqlite_sender(db)
        opened: Any = subject(db)  # type: ignore[call-arg]
        opened.batcher = Batcher(
            send, senders=self.senders(place.dialect), max_writes=self.commit.group_commit
        )
        return opened

    async def conversations(self, place: Place) -> BatchedConversations:
        """Create the floor's table and return the subject."""
        subject: BatchedConversations = await self._open(place, BatchedConversations)
        return subject

    async def long_run(self, place: Place) -> BatchedRun:
        """Create the floor's table and return the subject."""
        subject: BatchedRun = await self._open(place, BatchedRun)
        return subject
