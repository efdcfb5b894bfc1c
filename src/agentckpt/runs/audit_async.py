"""The optional audit log: raw step events appended off the hot path.

``audit.py`` is generated from ``audit_async.py`` by ``scripts/unasync.py``:
edit ``audit_async.py``.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from agentckpt._compat.background import AsyncDrain
from agentckpt._core.codec import DEFAULT_LIMITS, Limits
from agentckpt.runs import queries
from agentckpt.runs.event_rows import AuditEvent, event_row, read_event
from agentckpt.store.store_async import AsyncStore, RunId, as_run_id

__all__ = ["AsyncAuditLog"]

log = logging.getLogger("agentckpt.runs")


class AsyncAuditLog:
    """An append-only log of run events in the ``events`` table, written in the background.

    :meth:`emit` only puts the event on a bounded in-memory queue and returns; a
    background writer inserts queued events in batches. So the log never slows down or
    fails a commit: when the queue is full the event is dropped (counted in
    ``dropped``), and when a write fails it is logged (logger ``agentckpt.runs``) and
    counted in ``failed``, never raised. Events are therefore best effort, not a
    durable record: a crash loses what was still queued.

    Give it its own store (``AsyncStore.connect(url)``) so its writes never queue behind
    the run's commits on a shared connection.

    Example::

        async with AsyncAuditLog(audit_store) as audit:
            await AsyncAgentRun(store, run_id, audit=audit, ...).run(step)
    """

    def __init__(
        self,
        store: AsyncStore,
        *,
        maxsize: int = 10_000,
        batch_size: int = 200,
        close_timeout: float = 5.0,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.store = store
        self.limits = limits
        self.close_timeout = close_timeout
        self._bad = 0
        self._drain: AsyncDrain[dict[str, Any]] = AsyncDrain(
            self._write, maxsize=maxsize, batch_size=batch_size, name="agentckpt-audit"
        )

    @property
    def written(self) -> int:
        """Events written so far."""
        return self._drain.handled

    @property
    def dropped(self) -> int:
        """Events dropped because the queue was full or the log closed."""
        return self._drain.dropped

    @property
    def failed(self) -> int:
        """Events lost to a failed write or refused as not storable."""
        return self._drain.failed + self._bad

    async def __aenter__(self) -> AsyncAuditLog:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def start(self) -> None:
        """Start the background writer."""
        self._drain.start()

    async def close(self) -> None:
        """Write what is queued (within ``close_timeout`` seconds) and stop the writer."""
        await self._drain.close(self.close_timeout)

    def emit(self, run_id: RunId, kind: str, data: Any = None, *, step: int | None = None) -> bool:
        """Queue one event; never raises. False if it was dropped or refused.

        ``data`` must be a JSON value; it is encoded here, so later changes to it do not
        change the event.
        """
        row = self.row(run_id, kind, data, step=step)
        return row is not None and self.offer(row)

    def row(
        self, run_id: RunId, kind: str, data: Any = None, *, step: int | None = None
    ) -> dict[str, Any] | None:
        """The event's row, encoded now, to :meth:`offer` later (the overlapped loop holds
        a step's events until the step before it is durable); None, counted, if ``data``
        cannot be stored. Never raises."""
        try:
            return event_row(as_run_id(run_id), step, kind, data, limits=self.limits)
        except Exception:
            self._bad += 1
            log.exception("audit event %r of run %s refused", kind, run_id)
            return None

    def offer(self, row: dict[str, Any]) -> bool:
        """Queue a row made by :meth:`row`; False if it was dropped."""
        return self._drain.offer(row)

    async def _write(self, rows: list[dict[str, Any]]) -> None:
        await self.store.backend.write_many(queries.INSERT_EVENT, rows)

    async def events(self, run_id: RunId) -> list[AuditEvent]:
        """The run's events as stored, oldest first."""
        rid: UUID = as_run_id(run_id)
        rows = await self.store.backend.read(queries.LIST_EVENTS, {"run_id": rid})
        return [read_event(rid, row) for row in rows]
