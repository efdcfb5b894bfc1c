# GENERATED from context_async.py by scripts/unasync.py; do not edit.
"""What a step function receives: the state to build on and the run's services.

``context.py`` is generated from ``context_async.py`` by ``scripts/unasync.py``:
edit ``context_async.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from agentckpt.errors import StepAbandonedError
from agentckpt.runs.effect_keys import idempotency_key

if TYPE_CHECKING:
    from agentckpt._core.writes import Row
    from agentckpt.records import StepInfo
    from agentckpt.runs.loop import AgentRun

__all__ = ["StepContext"]


class _Parent(Protocol):
    """The commit of the step a step builds on, while the run overlaps them."""

    def result(self) -> StepInfo:
        """Its outcome once durable, or its error."""
        ...


class StepContext:
    """What a step function receives: the state to build on and the run's services.

    ``state`` is the state committed at ``parent_step``, the run's own: mutate it and
    return it (or build a new one). When the step before returned the object it was
    given, this is that very object, not a copy (a step that keeps a reference to its
    state past its return sees the next step's changes); otherwise it is a private
    copy. What was stored cannot change either way, and a step that fails leaves the
    committed state as it was for its retry. ``step`` is the number being computed and
    ``attempt`` counts tries of this step (1 on the first).

    In an overlapped run (``overlap=True``) the step may be computed while the commit of
    ``parent_step`` is still in flight: :meth:`effect` then waits for that commit to be
    durable before it runs anything, and :meth:`emit` holds its events until then.
    """

    def __init__(
        self,
        run: AgentRun,
        step: int,
        parent_step: int,
        attempt: int,
        state: Any,
        after: _Parent | None = None,
    ) -> None:
        self._run = run
        self.run_id: UUID = run.run_id
        self.step = step
        self.parent_step = parent_step
        self.attempt = attempt
        self.state = state
        # The commit of parent_step, in flight while this step is computed (overlap);
        # the events emitted meanwhile, offered once it is durable.
        self._after = after
        self._holding = after is not None
        self.held: list[Row] = []

    @property
    def speculative(self) -> bool:
        """This step is computed while the commit of ``parent_step`` is in flight."""
        return self._after is not None

    def durable_parent(self) -> None:
        """Return once ``parent_step`` is durable (at once unless the run overlaps);
        :class:`StepAbandonedError` if its commit failed: this step is then thrown away
        and computed again, so nothing that must not act on an uncommitted history may
        run (what :meth:`effect` does first)."""
        if self._after is None:
            return
        try:
            self._after.result()
        except Exception as exc:
            raise StepAbandonedError(
                f"run {self.run_id} step {self.step}: the commit of step {self.parent_step} "
                f"failed ({type(exc).__name__}: {exc}); this step is thrown away and "
                "computed again"
            ) from exc
        self._after = None

    def idempotency_key(self, key: str) -> str:
        """The deterministic idempotency key of effect ``key`` of this step."""
        return idempotency_key(self.run_id, self.step, key)

    def effect(self, key: str, action: Callable[[str], Any]) -> Any:
        """Run an external action once for (run, step, ``key``) and return its result.

        On a replay of this step (after a crash or a :class:`TransientError`) the
        recorded result is returned and ``action`` is not called. ``action`` receives
        the idempotency key: pass it to the external system, which closes the
        at-least-once window (the action ran, the process died before recording it).
        The result must be a JSON value. ``action`` may be an async function or a
        plain one. In an overlapped run it first waits for :meth:`durable_parent`.
        """
        self.durable_parent()
        return self._run._effects.perform(self.run_id, self.step, key, action)

    def load(self, value: Any) -> Any:
        """The content of a blob reference (``str`` or ``bytes``); other values as they are."""
        return self._run.load(value)

    def emit(self, kind: str, data: Any = None) -> bool:
        """Append a raw event to the audit log, if the run has one; never raises.

        In an overlapped run a step computed while ``parent_step`` commits has its
        events encoded now and queued once that commit is durable (after its
        ``step.committed`` event), or dropped if it fails.
        """
        if not self._holding:
            return self._run._emit(kind, data, step=self.step)
        row = self._run._event_row(kind, data, step=self.step)
        if row is None:
            return False
        self.held.append(row)
        return True

    def release(self, *, offer: bool) -> None:
        """The loop's, once ``parent_step`` is settled: queue the held events (``offer``)
        or drop them (its commit failed), and emit the later ones at once."""
        held, self.held, self._holding = self.held, [], False
        if offer:
            for row in held:
                self._run._offer(row)
