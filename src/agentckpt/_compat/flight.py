"""A commit in flight while its caller goes on: a task, or (threads) a result at once.

The run loop's overlap (``AsyncAgentRun(..., overlap=True)``) sends step N's commit and
computes step N+1 while it is made durable. :class:`AsyncFlight` runs the commit in a
task of its own; awaiting :meth:`AsyncFlight.result` (any number of times, from any
task) gives its outcome or raises its error. :class:`Flight` is the threaded twin's
form: the threaded loop refuses ``overlap=True`` (:data:`overlaps`), so it only holds a
result computed before it was made.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger("agentckpt.runs")

# Whether the loop of this form can overlap a commit with the next step: the asyncio
# loop can (the commit is awaited by a task while the loop runs the step); the threaded
# one would need a writer thread per run, which it does not have.
overlaps_async = True
overlaps = False


class AsyncFlight(Generic[T]):
    """``send`` (a coroutine) running in a task, started now."""

    __slots__ = ("_task",)

    def __init__(self, send: Coroutine[Any, Any, T]) -> None:
        self._task: asyncio.Task[T] = asyncio.ensure_future(send)

    async def started(self) -> None:
        """Give the commit's task a turn of the event loop, so it is handed to its
        sender (the SQLite thread, the PostgreSQL socket) before the caller computes on:
        a task only starts once the loop runs, and a step that never suspends would
        otherwise hold it back until the caller waits for its outcome."""
        await asyncio.sleep(0)

    def done(self) -> bool:
        """Whether the commit has settled (its outcome or error is ready)."""
        return self._task.done()

    async def result(self) -> T:
        """The commit's outcome once settled, or its error (shielded: a caller cancelled
        while it waits does not cancel the commit, which others may be waiting for)."""
        return await asyncio.shield(self._task)

    async def abandon(self) -> None:
        """Its caller stops (an error, a break, a cancellation): wait for the commit to
        settle, whatever its outcome, so it does not outlive the caller's lease or store,
        and a commit that was sent lands as it would have (one round trip). Cancelled
        again while it waits, the commit is cancelled (its outcome is then unknown, as
        for any cancelled commit) and so is this."""
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.done():
                self._task.cancel()
            raise
        except Exception as exc:
            log.info("an overlapped commit nobody waits for any more failed: %s", exc)


class Flight(Generic[T]):
    """The threaded form: a result already computed (the threaded loop does not overlap)."""

    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value = value

    def result(self) -> T:
        """The result."""
        return self._value

    def done(self) -> bool:
        """Always: the result is there."""
        return True

    def started(self) -> None:
        """Nothing to start."""

    def abandon(self) -> None:
        """Nothing to wait for."""
