"""Group commit: concurrent commits of different runs share one transaction.

A commit costs a round trip, a transaction and a WAL flush, and most of that cost does
not grow with what it writes. When many agents of one process commit at once, waiting
commits are sent together, as one statement in one transaction, by at most
``concurrency`` senders at a time. A commit that finds a sender free goes at once, so a
lone commit waits for nothing; batches form only while every sender is busy, from the
commits that queued meanwhile. This is a database's own group commit, one level up: it
shares the statement, the transaction and the client's work, not only the flush.

A write's payload is packed (compressed) by the thread that sends it in the async
twin: for SQLite, the backend's worker thread, beside the event loop; the threaded twin
packs it in the committing thread before it queues, so threads compress in parallel.

A batch holds at most one write per run (a run's steps are ordered; the statement
writes each run's row once) and at most ``max_writes`` writes and about ``max_bytes``
bytes. A write of a run whose earlier write is still being sent waits for it (the
overlapped run loop sends step N+1, guarded by step N, while N is in flight): sent on
another connection at once, it could reach the database first and be refused (the
asyncio form; the threaded one has no caller that sends so). When a batch fails as a
whole with an error the database raised for one of its writes, each write is sent
again alone, so the error reaches the commit that caused it and the others land.
Errors that say nothing about any one write (the server is unreachable, the outcome is
unknown) go to every commit of the batch.

:class:`AsyncGroupCommit` sends a lone commit from the caller's task, and batches from
tasks of its own, so a caller that is cancelled while waiting never cancels a batch that
carries other callers' writes.
:class:`GroupCommit` is the threaded twin: the calling thread sends, and hands the
queue to a waiting thread when its own write is done.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from agentckpt._core.writes import CommitOutcome, StepWrite
from agentckpt.errors import OutcomeUnknownError, UnavailableError

R = TypeVar("R")

# Errors about the connection or the server, not about a write: resending each write
# alone would only repeat them (and their waits) once per write.
_BATCH_WIDE = (OutcomeUnknownError, UnavailableError)

MAX_WRITES = 64
MAX_BYTES = 8 * 1024 * 1024


def write_bytes(write: StepWrite) -> int:
    """The bytes a write sends: its payload, blobs and history rows (the payload's
    document if it is not packed yet: the sender packs it, not the caller's thread)."""
    return (
        write.stored.size()
        + sum(len(b.data) for b in write.blobs)
        + sum(len(h.payload) for h in write.history)
    )


@dataclass(slots=True)
class _Waiter(Generic[R]):
    """A queued write and where its outcome goes (a future, or a thread's mailbox)."""

    write: StepWrite
    reply: R
    size: int = field(default=0)


def follows(write: StepWrite, before: StepWrite) -> bool:
    """``write`` is guarded by the head ``before`` leaves (the next step of its run)."""
    return (
        write.run_id == before.run_id
        and write.expected_step == before.step
        and write.expected_version == before.write_version
    )


def _take(
    queue: deque[_Waiter[R]],
    max_writes: int,
    max_bytes: int,
    busy: set[object] | None = None,
    *,
    chains: bool = False,
) -> list[_Waiter[R]]:
    """Remove and return the next batch: queue order, one write per run, within limits.

    The first write always goes, however big; writes of a run already in the batch, or
    in ``busy`` (being sent), stay queued, in order, for a later batch. With ``chains``,
    a write guarded by the head its run's last write in the batch leaves (the overlapped
    run loop's next step) joins that batch behind it: the backend writes them in order,
    in the same transaction.
    """
    batch: list[_Waiter[R]] = []
    runs: set[object] = set(busy) if busy else set()
    last: dict[object, StepWrite] = {}
    skipped: list[_Waiter[R]] = []
    size = 0
    while queue and len(batch) < max_writes:
        waiter = queue.popleft()
        run = waiter.write.run_id
        if run in runs:
            before = last.get(run)
            if before is None or not chains or not follows(waiter.write, before):
                # Its run's later writes stay behind it too: a run's writes keep their order.
                last.pop(run, None)
                skipped.append(waiter)
                continue
        if batch and size + waiter.size > max_bytes:
            queue.appendleft(waiter)
            break
        batch.append(waiter)
        runs.add(run)
        last[run] = waiter.write
        size += waiter.size
    queue.extendleft(reversed(skipped))
    return batch


class _Queue(Generic[R]):
    """The queue of writes waiting for a sender, and the limits of one batch."""

    def __init__(self, *, concurrency: int, max_writes: int, max_bytes: int) -> None:
        self._concurrency = max(1, concurrency)
        self._max_writes = max(1, max_writes)
        self._max_bytes = max_bytes
        self._queue: deque[_Waiter[R]] = deque()
        # Senders running: counted by hand (an asyncio task's done callback runs a loop
        # iteration after it ends, and a write queued in between would find no sender).
        self._active = 0

    def _next_batch(self) -> list[_Waiter[R]]:
        return _take(self._queue, self._max_writes, self._max_bytes)


class AsyncGroupCommit(_Queue[asyncio.Future[CommitOutcome]]):
    """Sends concurrent commits in batches through ``send`` (asyncio).

    ``send`` writes a batch in one transaction and returns one outcome per write, in
    order; it raises when the transaction as a whole fails.
    """

    def __init__(
        self,
        send: Callable[[Sequence[StepWrite]], Awaitable[list[CommitOutcome]]],
        *,
        concurrency: int,
        max_writes: int = MAX_WRITES,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        super().__init__(concurrency=concurrency, max_writes=max_writes, max_bytes=max_bytes)
        self._send = send
        self._tasks: set[asyncio.Task[None]] = set()
        # The runs with a write being sent: their next write waits for it.
        self._busy: set[object] = set()

    async def commit(self, write: StepWrite) -> CommitOutcome:
        """Send ``write`` (with others queued meanwhile) and return its outcome once
        durable."""
        run = write.run_id
        if not self._queue and self._active < self._concurrency and run not in self._busy:
            # Nothing queued and a sender free: send it from this task, alone.
            self._active += 1
            self._busy.add(run)
            try:
                outcomes = await self._send([write])
            finally:
                self._busy.discard(run)
                self._release()
            return outcomes[0]
        future: asyncio.Future[CommitOutcome] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(write, future, write_bytes(write))
        self._queue.append(waiter)
        if self._active < self._concurrency:
            self._active += 1
            self._spawn()
        try:
            return await future
        except asyncio.CancelledError:
            # Not taken yet: it will never be sent. Taken: its outcome is unknown, as for
            # any cancelled write, and a retry of the same commit is safe.
            if waiter in self._queue:
                self._queue.remove(waiter)
            raise

    async def commit_chain(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Send one run's next steps (each guarded by the one before) and return their
        outcomes once durable: together, in one batch, when a sender is free; else each
        queued in order, so they join the next batches together (see :func:`_take`)."""
        run = writes[0].run_id
        if not self._queue and self._active < self._concurrency and run not in self._busy:
            self._active += 1
            self._busy.add(run)
            try:
                return await self._send(writes)
            finally:
                self._busy.discard(run)
                self._release()
        return list(await asyncio.gather(*[self.commit(write) for write in writes]))

    def _spawn(self) -> None:
        """Start a sender on a slot already counted in ``_active``."""
        task = asyncio.create_task(self._drain())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _release(self) -> None:
        """Free a slot, or hand it to a new sender if writes queued meanwhile."""
        if self._queue:
            self._spawn()
        else:
            self._active -= 1

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch = _take(
                    self._queue, self._max_writes, self._max_bytes, self._busy, chains=True
                )
                if not batch:
                    break  # each queued write waits for its run's write being sent
                live = [w for w in batch if not w.reply.done()]  # drop cancelled callers
                if not live:
                    continue
                runs = {w.write.run_id for w in live}
                self._busy |= runs
                try:
                    await self._settle(live)
                finally:
                    self._busy -= runs
        except BaseException:
            self._active -= 1  # cancelled with the event loop: start nothing new
            raise
        # No await between the empty queue and this: a write queued now spawns a sender.
        self._active -= 1

    async def _settle(self, batch: list[_Waiter[asyncio.Future[CommitOutcome]]]) -> None:
        try:
            outcomes = await self._send([w.write for w in batch])
        except _BATCH_WIDE as exc:
            for waiter in batch:
                _fail(waiter.reply, exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                _fail(batch[0].reply, exc)
                return
            for waiter in batch:  # find the write the database refused
                await self._settle([waiter])
            return
        except BaseException as exc:
            # The sender itself is cancelled (the event loop is shutting down).
            for waiter in batch:
                _fail(waiter.reply, exc)
            raise
        for waiter, outcome in zip(batch, outcomes, strict=True):
            if not waiter.reply.done():
                waiter.reply.set_result(outcome)

    async def wait_idle(self) -> None:
        """Return once no batch is being sent (before the connections close)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _fail(future: asyncio.Future[CommitOutcome], exc: BaseException) -> None:
    if future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(exc)


@dataclass(slots=True)
class _Slot:
    """A waiting thread's mailbox: its outcome or error, or the lead handed to it.

    Fields are set before ``event`` is set and read after it is cleared, so no wake-up
    is lost.
    """

    event: threading.Event = field(default_factory=threading.Event)
    outcome: CommitOutcome | None = None
    error: BaseException | None = None
    lead: bool = False

    @property
    def settled(self) -> bool:
        return self.outcome is not None or self.error is not None


class GroupCommit(_Queue[_Slot]):
    """Sends concurrent commits in batches through ``send`` (threads).

    A thread that finds a sender slot free sends batches until its own write is done,
    then hands the slot to the oldest queued thread without one, or frees it.
    """

    def __init__(
        self,
        send: Callable[[Sequence[StepWrite]], list[CommitOutcome]],
        *,
        concurrency: int,
        max_writes: int = MAX_WRITES,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        super().__init__(concurrency=concurrency, max_writes=max_writes, max_bytes=max_bytes)
        self._send = send
        self._lock = threading.Lock()

    def commit(self, write: StepWrite) -> CommitOutcome:
        """Queue ``write`` and return its outcome once its batch is durable."""
        # Packed by the calling thread, before it queues: threads then compress at once
        # (zstd releases the GIL), not one after the other in the sender of their batch.
        write.stored.pack()
        if self._take_sender():
            # Nothing queued and a sender free: send it from this thread, alone, without
            # a mailbox; a batch of one raises its own error, as _settle would pass it on.
            try:
                return self._send([write])[0]
            finally:
                self._hand_on()
        slot = _Slot()
        with self._lock:
            self._queue.append(_Waiter(write, slot, write_bytes(write)))
            if self._active < self._concurrency:
                self._active += 1
                slot.lead = True
        while True:
            # Both read under the lock: a slot handed to this thread must be passed on,
            # even when its write is settled; once settled (so taken from the queue, under
            # the lock), no slot can be handed to it any more.
            with self._lock:
                lead, slot.lead = slot.lead, False
                settled = slot.settled
            if lead:
                self._lead(slot)
                continue
            if settled:
                break
            slot.event.wait()
            slot.event.clear()
        if slot.error is not None:
            raise slot.error
        assert slot.outcome is not None
        return slot.outcome

    def commit_chain(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """One run's next steps, each guarded by the one before: together, in one batch,
        when a sender is free; else one after the other (the threaded run loop does not
        overlap its steps, so nothing else queues a run's steps behind each other)."""
        for write in writes:
            write.stored.pack()
        if self._take_sender():
            try:
                return self._send(writes)
            finally:
                self._hand_on()
        return [self.commit(write) for write in writes]

    def _take_sender(self) -> bool:
        """Take a sender slot for this thread if nothing is queued and one is free."""
        with self._lock:
            if self._queue or self._active >= self._concurrency:
                return False
            self._active += 1
            return True

    def _lead(self, own: _Slot) -> None:
        try:
            while not own.settled:
                with self._lock:
                    batch = self._next_batch()
                if not batch:
                    break  # another sender has it in flight
                self._settle(batch)
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        """Free this thread's sender slot, or hand it to the oldest queued thread
        without one."""
        with self._lock:
            heir = next((w.reply for w in self._queue if not w.reply.lead), None)
            if heir is None:
                self._active -= 1
            else:
                heir.lead = True
                heir.event.set()

    def _settle(self, batch: list[_Waiter[_Slot]]) -> None:
        try:
            outcomes = self._send([w.write for w in batch])
        except _BATCH_WIDE as exc:
            _fail_all(batch, exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                _fail_all(batch, exc)
                return
            for waiter in batch:  # find the write the database refused
                self._settle([waiter])
            return
        except BaseException as exc:
            _fail_all(batch, exc)
            raise
        for waiter, outcome in zip(batch, outcomes, strict=True):
            waiter.reply.outcome = outcome
            waiter.reply.event.set()

    def wait_idle(self) -> None:
        """Nothing to wait for: every batch is sent by a thread that waits for it."""


def _fail_all(batch: list[_Waiter[_Slot]], exc: BaseException) -> None:
    for waiter in batch:
        waiter.reply.error = exc
        waiter.reply.event.set()


__all__ = ["MAX_BYTES", "MAX_WRITES", "AsyncGroupCommit", "GroupCommit", "write_bytes"]
