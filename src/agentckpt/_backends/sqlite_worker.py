"""The asynchronous face of the SQLite backend: each call runs on one worker thread.

``sqlite3`` is blocking, so the async backend hands every call to a single dedicated
thread. One thread keeps the connection's transactions strictly ordered. A cancelled
call may still complete on the thread; a cancelled commit is therefore of unknown
outcome, and retrying it is safe because commits are idempotent.

The thread takes calls from a queue and hands each result back with one
``call_soon_threadsafe``: about half the CPU of ``run_in_executor``, whose
``concurrent.futures`` future is chained to an asyncio one (about 50 against 23 us a
call, measured on this project's test machine), paid once per commit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from queue import SimpleQueue
from typing import Any, TypeVar

from agentckpt._backends.base import Params
from agentckpt._backends.sqlite import SqliteBackend
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
        # A daemon, so a store never closed cannot hang the interpreter's exit; the
        # atexit hook still lets a call in flight finish first, as an executor's would.
        self._thread = threading.Thread(target=self._serve, name="agentckpt-sqlite", daemon=True)
        self._thread.start()
        _workers.add(self)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            fn, future, loop = call
            if future.cancelled():  # cancelled before it started: skip it, as an executor does
                continue
            result, error = self._run(fn)
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

    async def call(self, fn: Callable[[], T]) -> T:
        if self._stopped:
            # What ThreadPoolExecutor.submit raised after shutdown, which this replaces.
            raise RuntimeError("cannot schedule new futures after shutdown")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
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


class AsyncSqliteBackend:
    """An :class:`SqliteBackend` driven from asyncio without blocking the event loop."""

    dialect = "sqlite"
    # One worker thread: one batch in flight at a time.
    max_batches = 1

    def __init__(self, backend: SqliteBackend) -> None:
        self.sync = backend
        self.tenant = backend.tenant
        self._worker = _Worker()

    async def _call(self, fn: Callable[[], T]) -> T:
        return await self._worker.call(fn)

    async def migrate(self) -> list[int]:
        """See :meth:`SqliteBackend.migrate`."""
        return await self._call(self.sync.migrate)

    async def applied_migrations(self) -> list[int]:
        """See :meth:`SqliteBackend.applied_migrations`."""
        return await self._call(self.sync.applied_migrations)

    async def read(self, name: str, params: Params) -> list[Row]:
        """See :meth:`SqliteBackend.read`."""
        return await self._call(partial(self.sync.read, name, params))

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
        return await self._call(partial(self.sync.commit_batch, writes))

    async def close(self) -> None:
        """Close the connection, stop the worker thread."""
        await self._call(self.sync.close)
        self._worker.stop()
