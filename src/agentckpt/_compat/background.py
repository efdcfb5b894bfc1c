"""Background work for the run loop, in a thread (sync) or a task (async).

These are the few pieces whose sync and async forms differ in kind, not in tokens, so
both are written here by hand, side by side: ``Ticker``/``AsyncTicker`` call a function
periodically (the lease heartbeat) and ``Drain``/``AsyncDrain`` feed a bounded queue to
a consumer (the audit log). The generated ``_sync`` modules use the plain names, the
``_async`` sources the ``Async`` ones.

Neither ever raises into the code that feeds it: a failing callback is logged and
counted, and a full queue drops the new item and counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["AsyncDrain", "AsyncTicker", "Drain", "Ticker"]

log = logging.getLogger("agentckpt.runs")

T = TypeVar("T")

# How often an idle Drain thread looks at its stop flag.
_POLL = 0.05


class Ticker:
    """Call ``fn`` every ``interval`` seconds on a daemon thread until :meth:`stop`.

    ``fn`` returning ``False`` ends the ticking; an exception is logged and ticking goes on.
    """

    def __init__(self, interval: float, fn: Callable[[], bool | None], *, name: str) -> None:
        self.interval = interval
        self._fn = fn
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start ticking (the first call comes after one interval)."""
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if self._fn() is False:
                    return
            except Exception:
                log.exception("%s: periodic call failed; will try again", self._name)

    def stop(self) -> None:
        """Stop ticking and wait for a call in progress to end."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None


class AsyncTicker:
    """Await ``fn()`` every ``interval`` seconds in a task until :meth:`stop`."""

    def __init__(
        self, interval: float, fn: Callable[[], Awaitable[bool | None]], *, name: str
    ) -> None:
        self.interval = interval
        self._fn = fn
        self._name = name
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start ticking; must be called from a running event loop."""
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self._name)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                if await self._fn() is False:
                    return
            except Exception:
                log.exception("%s: periodic call failed; will try again", self._name)

    async def stop(self) -> None:
        """Stop ticking; a call in progress is cancelled."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _Counters:
    def __init__(self) -> None:
        self.handled = 0  # items handed to the consumer without an error
        self.dropped = 0  # items refused because the queue was full or closed
        self.failed = 0  # items whose batch the consumer raised on
        # Producers may be several threads (Drain); += on an int is not atomic.
        self._count_lock = threading.Lock()

    def _count(self, name: str, n: int = 1) -> None:
        with self._count_lock:
            setattr(self, name, getattr(self, name) + n)


class Drain(_Counters, Generic[T]):
    """A bounded queue drained in batches by ``handle`` on a daemon thread.

    :meth:`offer` never blocks and never raises: when the queue is full the item is
    dropped and counted in ``dropped``. A batch that ``handle`` raises on is logged and
    counted in ``failed``.
    """

    def __init__(
        self,
        handle: Callable[[list[T]], object],
        *,
        maxsize: int,
        batch_size: int,
        name: str,
    ) -> None:
        super().__init__()
        self._handle = handle
        self._batch_size = batch_size
        self._name = name
        self._queue: queue.Queue[T] = queue.Queue(maxsize=maxsize)
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the consumer thread."""
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def offer(self, item: T) -> bool:
        """Queue ``item``; False (and counted as dropped) if the queue is full or closed."""
        if self._closing.is_set():
            self._count("dropped")
            return False
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._count("dropped")
            return False
        return True

    def _loop(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=_POLL)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < self._batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._handle(batch)
                self._count("handled", len(batch))
            except Exception:
                self._count("failed", len(batch))
                log.exception("%s: a batch of %d items failed", self._name, len(batch))

    def close(self, within: float = 5.0) -> None:
        """Refuse new items, let the consumer finish the queued ones, stop.

        Waits at most ``within`` seconds; items still queued then count as dropped.
        """
        self._closing.set()
        if self._thread is not None:
            self._thread.join(within)
            self._thread = None
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._count("dropped")


class AsyncDrain(_Counters, Generic[T]):
    """A bounded queue drained in batches by ``await handle(batch)`` in a task.

    Same contract as :class:`Drain`; :meth:`offer` must be called on the loop's thread.
    """

    def __init__(
        self,
        handle: Callable[[list[T]], Awaitable[object]],
        *,
        maxsize: int,
        batch_size: int,
        name: str,
    ) -> None:
        super().__init__()
        self._handle = handle
        self._batch_size = batch_size
        self._name = name
        self._queue: asyncio.Queue[T] = asyncio.Queue(maxsize=maxsize)
        self._closing = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the consumer task; must be called from a running event loop."""
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self._name)

    def offer(self, item: T) -> bool:
        """Queue ``item``; False (and counted as dropped) if the queue is full or closed."""
        if self._closing:
            self._count("dropped")
            return False
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self._count("dropped")
            return False
        self._wake.set()
        return True

    async def _loop(self) -> None:
        while True:
            if self._queue.empty():
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch = [self._queue.get_nowait()]
            while len(batch) < self._batch_size and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._handle(batch)
                self._count("handled", len(batch))
            except Exception:
                self._count("failed", len(batch))
                log.exception("%s: a batch of %d items failed", self._name, len(batch))

    async def close(self, within: float = 5.0) -> None:
        """Refuse new items, let the consumer finish the queued ones, stop.

        Waits at most ``within`` seconds; items still queued then count as dropped.
        """
        self._closing = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), within)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        while not self._queue.empty():
            self._queue.get_nowait()
            self._count("dropped")
