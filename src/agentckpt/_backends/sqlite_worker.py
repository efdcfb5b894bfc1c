"""The asynchronous face of the SQLite backend: each call runs on one worker thread.

``sqlite3`` is blocking, so the async backend hands every call to a single dedicated
thread. One thread keeps the connection's transactions strictly ordered. A cancelled
call may still complete on the thread; a cancelled commit is therefore of unknown
outcome, and retrying it is safe because commits are idempotent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from agentckpt._backends.base import Params
from agentckpt._backends.sqlite import SqliteBackend
from agentckpt._core.writes import CommitOutcome, Row, StepWrite

T = TypeVar("T")


class AsyncSqliteBackend:
    """An :class:`SqliteBackend` driven from asyncio without blocking the event loop."""

    dialect = "sqlite"
    # One worker thread: one batch in flight at a time.
    max_batches = 1

    def __init__(self, backend: SqliteBackend) -> None:
        self.sync = backend
        self.tenant = backend.tenant
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentckpt-sqlite")

    async def _call(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

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
        self._executor.shutdown(wait=True)
