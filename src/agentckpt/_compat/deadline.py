"""A deadline on one database call that holds even against a server that stopped answering.

A frozen server (SIGSTOP, a hung VM, a network that drops packets one way) leaves a
client blocked inside the driver: the kernel on the server's side still acknowledges
every TCP segment, so ``tcp_user_timeout`` and keepalives never fire, and PostgreSQL's
``statement_timeout`` runs on the server itself (and is off during a commit's wait for a
synchronous standby). Only the client can end the wait. At the deadline
:class:`Deadline` (one watchdog thread for the process) and :class:`AsyncDeadline` (a
timer of the event loop) first send a
cancel request, which ends a live server's statement or its wait for a synchronous
standby; if the call has still not returned ``grace`` seconds later, they shut the
connection's socket down, so the blocked read returns at once with a lost connection.
The caller then discards the connection: it is never used again.

Both are context managers around the call; :attr:`expired` tells the caller afterwards
whether the deadline fired (whatever the call returned or raised meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Awaitable
from typing import Protocol

__all__ = ["GRACE", "AsyncDeadline", "Deadline", "cut"]

# Seconds a live server gets to answer the cancel request before the socket is cut.
GRACE = 1.0


class _SyncConnection(Protocol):
    def fileno(self) -> int: ...

    def cancel_safe(self, *, timeout: float = ...) -> None: ...


class _AsyncConnection(Protocol):
    def fileno(self) -> int: ...

    def cancel_safe(self, *, timeout: float = ...) -> Awaitable[None]: ...


def cut(fd: int) -> None:
    """Shut the socket ``fd`` down both ways; the reader blocked on it sees end of file.

    Works on a duplicate of the descriptor (a shutdown acts on the socket, not on the
    descriptor), so the driver's own descriptor stays valid until the driver closes it.
    """
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return  # already closed
    with sock, contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread that fires the deadlines of every :class:`Deadline` in the
    process; a deadline costs a heap push, not a thread, until it fires (then its
    cancel and cut run on a thread of their own, so one frozen server delays no other
    deadline)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._wake = threading.Condition()
        self._count = 0
        self._thread: threading.Thread | None = None

    def add(self, at: float, deadline: Deadline) -> None:
        with self._wake:
            self._count += 1
            heapq.heappush(self._heap, (at, self._count, deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="agentckpt-deadlines", daemon=True
                )
                self._thread.start()
            elif self._heap[0][2] is deadline:
                self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].finished:
                    heapq.heappop(self._heap)  # ended in time: forget it
                if not self._heap:
                    self._wake.wait()
                    continue
                at, _, deadline = self._heap[0]
                delay = at - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                heapq.heappop(self._heap)
            threading.Thread(target=deadline.fire, name="agentckpt-deadline", daemon=True).start()


_WATCHDOG = _Watchdog()


class Deadline:
    """Cancel, then cut, the connection's call if it runs past ``seconds`` (threads)."""

    def __init__(self, conn: _SyncConnection, seconds: float, *, grace: float = GRACE) -> None:
        self.expired = False
        self.finished = False
        self._conn: _SyncConnection | None = conn
        self._seconds = seconds
        self._grace = grace
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._fired = threading.Event()

    def __enter__(self) -> Deadline:
        _WATCHDOG.add(time.monotonic() + self._seconds, self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.finished = True
            self._done.set()
            expired = self.expired
            if not expired:
                self._conn = None  # the watchdog's heap may outlive the call
        if expired:
            # A cancel or cut in progress ends before the caller closes the connection
            # (bounded: the cancel has its own timeout, the wait in fire() returns now).
            self._fired.wait()

    def fire(self) -> None:
        """The deadline passed: cancel the call, and cut the socket if that is not enough."""
        with self._lock:
            if self.finished or self._conn is None:
                return
            self.expired = True
            conn = self._conn
        try:
            fd = conn.fileno()
            with contextlib.suppress(Exception):
                conn.cancel_safe(timeout=self._grace)
            if not self._done.wait(self._grace):
                cut(fd)
        except Exception:  # the connection closed meanwhile: nothing to stop
            pass
        finally:
            self._fired.set()


class _LoopWatch:
    """One timer of an event loop for every :class:`AsyncDeadline` entered on it: a
    deadline costs a dict entry while its call runs, not a timer handle of its own.

    Each call's own ``call_later`` and cancel left a cancelled handle in the loop's heap
    (it drops them only once they are half of it), so every timer scheduled on the loop,
    psycopg's own wait included, compared its way through them: about 10 ``__lt__``
    calls and a tenth of the PostgreSQL backend's client instructions per statement. The
    one timer is set for the earliest deadline of the calls in flight and is moved only
    when a call with an earlier one enters; when it fires it ends the calls past theirs
    and is set again for the earliest left, if any.
    """

    def __init__(self) -> None:
        self.calls: dict[AsyncDeadline, float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf

    def add(self, loop: asyncio.AbstractEventLoop, call: AsyncDeadline, at: float) -> None:
        self.calls[call] = at
        if at < self._at:
            if self._timer is not None:
                self._timer.cancel()
            self._at = at
            self._timer = loop.call_at(at, self._check, loop)

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        self._at = math.inf
        now = loop.time()
        late = [call for call, at in self.calls.items() if at <= now]
        for call in late:
            del self.calls[call]
            call.fire()
        if self.calls:
            self.add(loop, *min(self.calls.items(), key=lambda item: item[1]))


# The watch of each event loop (a loop's watch holds no reference to its loop).
_LOOP_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWatch] = (
    weakref.WeakKeyDictionary()
)


class AsyncDeadline:
    """Cancel, then cut, the connection's call if it runs past ``seconds`` (asyncio).

    The caller's task is not cancelled: the call ends by itself, with the server's answer
    to the cancel or with the lost connection, so no cancellation reaches the driver.
    The deadline is watched by the loop's one timer (``_LoopWatch``); leaving the block
    takes the call off it, so a deadline never fires for a call that has ended.
    """

    __slots__ = ("_conn", "_done", "_grace", "_seconds", "_task", "_watch", "expired")

    def __init__(self, conn: _AsyncConnection, seconds: float, *, grace: float = GRACE) -> None:
        self.expired = False
        self._conn = conn
        self._seconds = seconds
        self._grace = grace
        self._watch: _LoopWatch | None = None
        # Made when the deadline fires: what the stop waits on (the call's end).
        self._done: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AsyncDeadline:
        loop = asyncio.get_running_loop()
        watch = _LOOP_WATCHES.get(loop)
        if watch is None:
            watch = _LOOP_WATCHES[loop] = _LoopWatch()
        self._watch = watch
        watch.add(loop, self, loop.time() + self._seconds)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._watch is not None
        self._watch.calls.pop(self, None)
        if self._done is not None:
            self._done.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    def fire(self) -> None:
        """The deadline passed (called by the loop's watch while the call runs)."""
        self.expired = True
        self._done = asyncio.Event()
        self._task = asyncio.ensure_future(self._stop(self._done))

    async def _stop(self, done: asyncio.Event) -> None:
        fd = self._conn.fileno()
        with contextlib.suppress(Exception):
            await self._conn.cancel_safe(timeout=self._grace)
        try:
            await asyncio.wait_for(done.wait(), self._grace)
        except TimeoutError:
            cut(fd)
