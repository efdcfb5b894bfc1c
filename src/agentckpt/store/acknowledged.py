"""The highest step a store acknowledged per run, to notice a head that went backwards.

A commit's head only ever moves forward. A writer that reads a head *below* a step it was
itself told was durable has found lost acknowledged commits: the database was restored
from a backup, or failed over to a replica that had not received them (asynchronous
replication). :meth:`Acknowledged.check` raises
:class:`~agentckpt.errors.AcknowledgedStepsLostError` for it, logs it at ERROR on
``agentckpt.store`` with the run id and both steps, and counts it in the store's
:class:`Counters`; then it forgets the run, so the writer goes on from the database's head.

The memory is bounded (least recently acknowledged runs are forgotten first) and per
store: a new process cannot tell. A run deleted and created again with the same id by
another process would look like a lost head to a store that wrote the old one.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from uuid import UUID

from agentckpt.errors import AcknowledgedStepsLostError

__all__ = ["ACKNOWLEDGED_STEPS_LOST", "LOST_STEPS", "Acknowledged", "Counters"]

log = logging.getLogger("agentckpt.store")

# Counter names (a metrics exporter publishes them as they are).
ACKNOWLEDGED_STEPS_LOST = "acknowledged_steps_lost"  # times a head was found too old
LOST_STEPS = "lost_steps"  # acknowledged steps gone, summed over those times

# Runs remembered; beyond this the least recently acknowledged is forgotten.
_SIZE = 4096

Listener = Callable[[str, int, dict[str, object]], None]


class Counters:
    """Event counts of one store, for a metrics exporter to read or subscribe to.

    ``snapshot()`` returns the totals; ``subscribe(fn)`` calls ``fn(name, amount,
    attributes)`` on every increment (from the thread that counted; it must not block).
    """

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add(self, name: str, amount: int = 1, **attributes: object) -> None:
        """Count ``amount`` more of ``name``."""
        with self._lock:
            self._counts[name] += amount
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(name, amount, attributes)
            except Exception:
                log.exception("a counter listener failed on %s", name)

    def snapshot(self) -> dict[str, int]:
        """The totals so far."""
        with self._lock:
            return dict(self._counts)

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(name, amount, attributes)`` on every later increment."""
        with self._lock:
            self._listeners.append(listener)


class Acknowledged:
    """The highest step acknowledged per run, bounded; thread-safe, never does I/O."""

    def __init__(self, counters: Counters, *, size: int = _SIZE) -> None:
        self._steps: OrderedDict[UUID, int] = OrderedDict()
        self._size = size
        self._counters = counters
        self._lock = threading.Lock()

    def record(self, run_id: UUID, step: int) -> None:
        """``step`` of the run was acknowledged to the caller."""
        with self._lock:
            if step > self._steps.get(run_id, -1):
                self._steps[run_id] = step
            self._steps.move_to_end(run_id)
            while len(self._steps) > self._size:
                self._steps.popitem(last=False)

    def forget(self, run_id: UUID) -> None:
        """Forget the run (it was deleted)."""
        with self._lock:
            self._steps.pop(run_id, None)

    def check(self, run_id: UUID, head_step: int | None) -> None:
        """Raise :class:`AcknowledgedStepsLostError` if ``head_step`` (the head just read
        from the database) is below a step this store acknowledged."""
        with self._lock:
            acknowledged = self._steps.get(run_id)
            if acknowledged is None or (head_step is not None and head_step >= acknowledged):
                return
            del self._steps[run_id]
        lost = acknowledged - (head_step if head_step is not None else -1)
        log.error(
            "run %s: the head is step %s but this store acknowledged step %d: %d "
            "acknowledged step(s) lost (the database was rolled back or failed over "
            "asynchronously; run `agentckpt doctor`)",
            run_id,
            head_step,
            acknowledged,
            lost,
        )
        self._counters.add(ACKNOWLEDGED_STEPS_LOST, run_id=str(run_id))
        self._counters.add(LOST_STEPS, lost, run_id=str(run_id))
        raise AcknowledgedStepsLostError(
            f"run {run_id}: the head is step {head_step}, below step {acknowledged} that "
            f"this store acknowledged: {lost} acknowledged step(s) were lost (the database "
            "was rolled back or failed over to a replica without them; `agentckpt doctor` "
            "says which setting allows it). Nothing was written; the run goes on from its "
            "head in the database",
            run_id=run_id,
            acknowledged_step=acknowledged,
            head_step=head_step,
        )
