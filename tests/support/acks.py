"""A backend whose commits really commit, then run a hook: how tests lose an
acknowledgement (the COMMIT reached the database, its answer did not reach the caller)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def after_each_commit(backend: Any, after: Callable[[Any], None]) -> Callable[..., Any]:
    """A stand-in for ``backend.commit_batch`` (sync or async, as the backend's) that
    commits the batch for real, then calls ``after(writes)``; an exception ``after``
    raises reaches the caller as the commit's own."""
    real = backend.commit_batch
    if inspect.iscoroutinefunction(real):

        async def commit_async(writes: Any) -> Any:
            outcomes = await real(writes)
            after(writes)
            return outcomes

        return commit_async

    def commit(writes: Any) -> Any:
        outcomes = real(writes)
        after(writes)
        return outcomes

    return commit
