"""The pieces whose sync and async forms differ in kind, not in tokens, written by hand.

The async sources (``*_async.py``) import the ``Async`` names or ``*_async`` helpers from
here; ``scripts/unasync.py`` turns those into the plain names, so the generated sync
twins reach the hand-written sync forms without any special rule:

- :class:`AsyncGroupCommit` / :class:`GroupCommit`: concurrent commits share a
  transaction (tasks and futures, or threads and a hand-off);
- :class:`AsyncTicker` / :class:`Ticker`: call a function periodically (the lease
  heartbeat), in a task or a daemon thread;
- :class:`AsyncDrain` / :class:`Drain`: feed a bounded queue to a consumer off the hot
  path (the audit log);
- :class:`AsyncDeadline` / :class:`Deadline`: bound one database call, even against a
  frozen server (a task, or a timer thread, cancels and then cuts the connection);
- :class:`AsyncFlight` / :class:`Flight`: a commit in flight while the run loop computes
  its next step (a task), or, threaded, a result computed at once (the threaded loop
  does not overlap: :data:`overlaps_async` / :data:`overlaps`);
- :data:`AsyncSent` / :data:`Sent`: the database outcome of a write sent already with
  others (the overlapped run loop's chain of steps), to come or come;
- :func:`sleep_async` / :func:`sleep`;
- :func:`resolved_async` / :func:`resolved`: the result of a callback that may be sync
  or async (the async API accepts both; the sync one takes it as it is);
- :func:`off_loop_async` / :func:`off_loop`: a long call that releases the GIL (zstd,
  sha256 of a large blob) on a thread of the event loop's executor, so the loop runs
  the other tasks meanwhile; the sync form calls it in the calling thread.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from agentckpt._compat.background import AsyncDrain, AsyncTicker, Drain, Ticker
from agentckpt._compat.deadline import AsyncDeadline, Deadline
from agentckpt._compat.flight import AsyncFlight, Flight, overlaps, overlaps_async
from agentckpt._compat.group_commit import AsyncGroupCommit, GroupCommit
from agentckpt._core.writes import CommitOutcome

T = TypeVar("T")

AsyncSent: TypeAlias = Awaitable[CommitOutcome]
Sent: TypeAlias = CommitOutcome

sleep_async = asyncio.sleep
sleep = time.sleep


async def off_loop_async(fn: Callable[[bytes], T], data: bytes) -> T:
    """``fn(data)`` on the loop's default executor: about 30 us of the loop's CPU to
    hand over and back, worth it for work that takes much longer and releases the GIL."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, data)


def off_loop(fn: Callable[[bytes], T], data: bytes) -> T:
    """``fn(data)``, here: the calling thread is the one that waits for it anyway."""
    return fn(data)


async def resolved_async(value: Any) -> Any:
    """``value``, awaited first if it is awaitable (an async callback's result)."""
    if inspect.isawaitable(value):
        return await value
    return value


def resolved(value: Any) -> Any:
    """``value`` as it is: a sync callback's result."""
    return value


__all__ = [
    "AsyncDeadline",
    "AsyncDrain",
    "AsyncFlight",
    "AsyncGroupCommit",
    "AsyncSent",
    "AsyncTicker",
    "Deadline",
    "Drain",
    "Flight",
    "GroupCommit",
    "Sent",
    "Ticker",
    "off_loop",
    "off_loop_async",
    "overlaps",
    "overlaps_async",
    "resolved",
    "resolved_async",
    "sleep",
    "sleep_async",
]
