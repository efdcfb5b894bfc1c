"""A deadline on one database call that holds even against a server that stopped answering.

A frozen server (SIGSTOP, a hung VM, a network that drops packets one way) leaves a
client blocked inside the driver: the kernel on the server's side still acknowledges
every TCP segment, so ``tcp_user_timeout`` and keepalives never fire, and PostgreSQL's
``statement_timeout`` runs on the server itself (and is off during a commit's wait for a
synchronous standby). Only the client can end the wait. At the deadline
:class:`Deadline` (a timer thread) and :class:`AsyncDeadline` (a task) first send a
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
import os
import socket
import threading
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


class Deadline:
    """Cancel, then cut, the connection's call if it runs past ``seconds`` (threads)."""

    def __init__(self, conn: _SyncConnection, seconds: float, *, grace: float = GRACE) -> None:
        self.expired = False
        self._conn = conn
        self._seconds = seconds
        self._grace = grace
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Deadline:
        self._timer = threading.Timer(self._seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._done.set()
        assert self._timer is not None
        self._timer.cancel()
        if self.expired:
            # A cancel or cut in progress ends before the caller closes the connection
            # (bounded: the cancel has its own timeout, the wait below returns now).
            self._timer.join()

    def _fire(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self.expired = True
        fd = self._conn.fileno()
        with contextlib.suppress(Exception):
            self._conn.cancel_safe(timeout=self._grace)
        if not self._done.wait(self._grace):
            cut(fd)


class AsyncDeadline:
    """Cancel, then cut, the connection's call if it runs past ``seconds`` (asyncio).

    The caller's task is not cancelled: the call ends by itself, with the server's answer
    to the cancel or with the lost connection, so no cancellation reaches the driver.
    """

    def __init__(self, conn: _AsyncConnection, seconds: float, *, grace: float = GRACE) -> None:
        self.expired = False
        self._conn = conn
        self._seconds = seconds
        self._grace = grace
        self._done = asyncio.Event()
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AsyncDeadline:
        self._handle = asyncio.get_running_loop().call_later(self._seconds, self._fire)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._done.set()
        assert self._handle is not None
        self._handle.cancel()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    def _fire(self) -> None:
        if self._done.is_set():
            return
        self.expired = True
        self._task = asyncio.ensure_future(self._stop())

    async def _stop(self) -> None:
        fd = self._conn.fileno()
        with contextlib.suppress(Exception):
            await self._conn.cancel_safe(timeout=self._grace)
        try:
            await asyncio.wait_for(self._done.wait(), self._grace)
        except TimeoutError:
            cut(fd)
