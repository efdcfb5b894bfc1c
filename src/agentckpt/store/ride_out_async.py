"""Ride out an outage: retry a store call under the store's :class:`OutagePolicy`
(async source; ``ride_out.py`` is generated from it by ``scripts/unasync.py``).

The conversation API and the framework adapters wrap their store calls in
:func:`ride_out_async`; the run loop applies the same policy to its steps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agentckpt import _compat
from agentckpt.store.outage_policy import OUTAGE_ERRORS, OutagePolicy
from agentckpt.telemetry.probes import retry_attempt

log = logging.getLogger("agentckpt.store")

T = TypeVar("T")


async def ride_out_async(
    policy: OutagePolicy,
    call: Callable[[], Awaitable[T]],
    *,
    what: str,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``, retried on :data:`OUTAGE_ERRORS` until ``policy.limit`` seconds have
    passed since the first failure; then the last error is raised.

    ``call`` must be safe to repeat: a read, or a commit (idempotent when repeated with
    the same content). ``what`` names the operation in the log.
    """
    since: float | None = None
    retry = 0
    while True:
        try:
            # A retry's spans say which retry they are (agentckpt.retry_count).
            with retry_attempt(retry):
                return await call()
        except OUTAGE_ERRORS as exc:
            now = clock()
            since = now if since is None else since
            if not policy.allows(since, now):
                raise
            retry += 1
            if policy.observer is not None:
                policy.observer(exc, retry)
            delay = policy.delay(retry)
            log.info(
                "%s: %s: %s; retrying in %.2f s (outage for %.1f s of at most %g s)",
                what,
                type(exc).__name__,
                exc,
                delay,
                now - since,
                policy.limit,
            )
            await _compat.sleep_async(delay)
