# GENERATED from context_async.py by scripts/unasync.py; do not edit.
"""What a step function receives: the state to build on and the run's services.

``context.py`` is generated from ``context_async.py`` by ``scripts/unasync.py``:
edit ``context_async.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentckpt.runs.effect_keys import idempotency_key

if TYPE_CHECKING:
    from agentckpt.runs.loop import AgentRun

__all__ = ["StepContext"]


class StepContext:
    """What a step function receives: the state to build on and the run's services.

    ``state`` is the state committed at ``parent_step``, the run's own: mutate it and
    return it (or build a new one). When the step before returned the object it was
    given, this is that very object, not a copy (a step that keeps a reference to its
    state past its return sees the next step's changes); otherwise it is a private
    copy. What was stored cannot change either way, and a step that fails leaves the
    committed state as it was for its retry. ``step`` is the number being computed and
    ``attempt`` counts tries of this step (1 on the first).
    """

    def __init__(
        self, run: AgentRun, step: int, parent_step: int, attempt: int, state: Any
    ) -> None:
        self._run = run
        self.run_id: UUID = run.run_id
        self.step = step
        self.parent_step = parent_step
        self.attempt = attempt
        self.state = state

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
        plain one.
        """
        return self._run._effects.perform(self.run_id, self.step, key, action)

    def load(self, value: Any) -> Any:
        """The content of a blob reference (``str`` or ``bytes``); other values as they are."""
        return self._run.load(value)

    def emit(self, kind: str, data: Any = None) -> bool:
        """Append a raw event to the audit log, if the run has one; never raises."""
        return self._run._emit(kind, data, step=self.step)
