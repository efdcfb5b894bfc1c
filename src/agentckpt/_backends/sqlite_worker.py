"""The asynchronous face of the SQLite backend: calls run on one worker thread, or on
the event loop's own thread while one run commits alone.

``sqlite3`` is blocking, so the async backend hands calls to a single dedicated thread.
One thread keeps the connection's transactions strictly ordered. A cancelled call may
still complete on the thread; a cancelled commit is therefore of unknown outcome, and
retrying it is safe because commits are idempotent.

The thread takes calls from a queue and hands each result back with one
``call_soon_threadsafe``: about half the CPU of ``run_in_executor``, whose
``concurrent.futures`` future is chained to an asyncio one (about 50 against 23 us a
call, measured on this project's test machine), paid once per commit.

The two hand-offs still cost about 0.1 ms of a long-run step's 0.5 ms, and buy nothing
when the loop has nothing else to do meanwhile: one run committing step after step. So
while one run commits alone, and the thread is idle, a call runs on the loop's thread
(:class:`_Inline` says when), without waiting for another process's write lock (such a
call goes to the thread, which waits).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from queue import SimpleQueue
from typing import Any, TypeVar
from uuid import UUID

from agentckpt._backends.base import Params
from agentckpt._backends.sqlite import LockHeld, SqliteBackend
from agentckpt._core.writes import CommitOutcome, Row, StepWrite

T = TypeVar("T")

_Call = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    # On the event loop's thread. A cancelled call may have completed anyway (see above).
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class _Worker:
    """One thread running the calls put on its queue, in order."""

    def __init__(self) -> None:
        self._calls: SimpleQueue[_Call | None] = SimpleQueue()
        self._stopped = False
        # Calls put (counted on the loop's thread) and calls done or skipped (on the
        # worker's): equal when no call is queued or running, even a cancelled one.
        self._put = 0
        self._done = 0
        # A daemon, so a store never closed cannot hang the interpreter's exit; the
        # atexit hook still lets a call in flight finish first, as an executor's would.
        self._thread = threading.Thread(target=self._serve, name="agentckpt-sqlite", daemon=True)
        self._thread.start()
        _workers.add(self)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            fn, future, loop = call
            if future.cancelled():  # cancelled before it started: skip it, as an executor does
                self._done += 1
                continue
            result, error = self._run(fn)
            self._done += 1
            # RuntimeError: the loop closed meanwhile, nobody waits for this answer.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)
            del call, fn, future, result, error

    def _run(self, fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        """``fn()``'s result, or the exception it raised."""
        try:
            return fn(), None
        except BaseException as exc:
            return None, exc

    @property
    def idle(self) -> bool:
        """No call is queued or running on the thread."""
        return self._done == self._put

    async def call(self, fn: Callable[[], T]) -> T:
        if self._stopped:
            # What ThreadPoolExecutor.submit raised after shutdown, which this replaces.
            raise RuntimeError("cannot schedule new futures after shutdown")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._put += 1
        self._calls.put((fn, future, loop))
        return await future

    def stop(self) -> None:
        """Let the calls queued so far finish, then end the thread."""
        self._stopped = True
        self._calls.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join()


_workers: weakref.WeakSet[_Worker] = weakref.WeakSet()


@atexit.register
def _stop_workers() -> None:
    for worker in list(_workers):
        worker.stop()


# Seconds the calls go to the worker thread for once inline calls got slow.
_COOL_DOWN = 10.0
# The weight of the latest inline call in their moving average.
_WEIGHT = 0.2
# The most uncompressed bytes a commit run inline writes: its payloads are compressed
# in the call, and a large state's zstd would hold the loop.
_INLINE_BYTES = 256 * 1024


class _Inline:
    """When a call runs on the event loop's own thread instead of the worker's.

    While several runs commit, the worker lets the loop compute their next steps while a
    batch is written, and group commit gathers those into the next batch: an inline call
    would hold them all. A lone run gains from it. So a commit runs inline only when it
    is a lone write (or a run's steps held back and sent together: the overlapped run
    loop's, on SQLite) of the run the previous commit was of (no other run committed in
    between), the other writes only while that holds, and reads (no fsync)
    whenever the worker is idle. A write marked ``overlapped`` (the run loop's overlap:
    its writer computes the next step meanwhile) never runs inline, nor do the other
    writes after it until a lone commit that is not overlapped.

    Inline calls hold the loop, so their time is watched: when its moving average goes
    over ``limit`` seconds (a slow disk's fsync, a loaded machine), the calls of the next
    :data:`_COOL_DOWN` seconds go to the worker, and the average starts afresh. An
    average, so that one fsync of a few milliseconds among hundreds of fast ones does
    not stop them; one call far over the limit does.
    """

    __slots__ = ("_average", "_last_run", "_until", "limit", "lone")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.lone = False
        self._last_run: object = None
        self._until = 0.0
        self._average = 0.0

    def commits(self, writes: Sequence[StepWrite]) -> bool:
        """Note a commit batch; whether it may run inline."""
        # One run's writes: a lone write, or its next steps held back and sent
        # together by the overlapped run loop, which waits for them.
        run: UUID | None = writes[0].run_id
        if any(w.run_id != run for w in writes):
            run = None
        # An overlapped write (the run loop computes its next step meanwhile) goes to
        # the thread: inline, its fsync would hold the very loop it overlaps with.
        self.lone = run is not None and run == self._last_run and not writes[0].overlapped
        self._last_run = run
        return self.lone and sum(w.raw_bytes for w in writes) <= _INLINE_BYTES

    def allowed(self) -> bool:
        """Inline calls are on, and not paused for slowness."""
        return self.limit > 0 and time.monotonic() >= self._until

    def took(self, seconds: float) -> None:
        """Note an inline call's time."""
        self._average += (seconds - self._average) * _WEIGHT
        if self._average > self.limit:
            self._until = time.monotonic() + _COOL_DOWN
            self._average = 0.0


class AsyncSqliteBackend:
    """An :class:`SqliteBackend` driven from asyncio without blocking the event loop
    for longer than its ``inline_limit``."""

    dialect = "sqlite"
    # One worker thread: one batch in flight at a time.
    max_batches = 1

    def __init__(self, backend: SqliteBackend) -> None:
        self.sync = backend
        self.tenant = backend.tenant
        self._worker = _Worker()
        self._inline = _Inline(backend.inline_limit)

    async def _call(self, fn: Callable[[], T], *, inline: bool | None = None) -> T:
        """``fn()`` on the loop's thread when ``inline`` (default: while a run commits
        alone) and the worker is idle, else on the worker."""
        wanted = self._inline.lone if inline is None else inline
        if wanted and self._worker.idle and self._inline.allowed():
            # An inline call never suspends its caller, and a coroutine whose awaits never
            # suspend starves every other task on the loop (a run committing in a loop
            # would hold it until done): let the others run first. Cancelled here, the
            # call has not started. Then the worker must still be idle.
            await asyncio.sleep(0)
        if wanted and self._worker.idle and self._inline.allowed():
            start = time.perf_counter()
            try:
                return self.sync.at_once(fn)
            except LockHeld:
                pass  # another process writes: wait for its lock on the thread
            finally:
                self._inline.took(time.perf_counter() - start)
        return await self._worker.call(partial(self.sync.waiting, fn))

    async def migrate(self) -> list[int]:
        """See :meth:`SqliteBackend.migrate`."""
        return await self._call(self.sync.migrate, inline=False)

    async def applied_migrations(self) -> list[int]:
        """See :meth:`SqliteBackend.applied_migrations`."""
        return await self._call(self.sync.applied_migrations, inline=False)

    async def read(self, name: str, params: Params) -> list[Row]:
        """See :meth:`SqliteBackend.read`."""
        # A read has no fsync to wait for: inline whenever the worker is idle.
        return await self._call(partial(self.sync.read, name, params), inline=True)

    async def write(self, name: str, params: Params) -> list[Row]:
        """See :meth:`SqliteBackend.write`."""
        return await self._call(partial(self.sync.write, name, params))

    async def write_many(self, name: str, params: Sequence[Params]) -> None:
        """See :meth:`SqliteBackend.write_many`."""
        await self._call(partial(self.sync.write_many, name, params))

    async def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None:
        """See :meth:`SqliteBackend.write_all`."""
        await self._call(partial(self.sync.write_all, writes))

    async def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """See :meth:`SqliteBackend.commit_batch`."""
        inline = self._inline.commits(writes)
        return await self._call(partial(self.sync.commit_batch, writes), inline=inline)

    async def close(self) -> None:
        """Close the connection, stop the worker thread."""
        await self._call(self.sync.close, inline=False)
        self._worker.stop()
