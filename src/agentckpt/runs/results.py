"""What a step function returns to end a run, and what a run returns when it ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

__all__ = ["Finish", "Recovered", "RunResult"]


@dataclass(frozen=True, slots=True)
class Finish:
    """Returned by a step function: commit ``state`` as the last step and complete the run.

    Example::

        def step(ctx):
            if ctx.state["answer"] is not None:
                return Finish(ctx.state)
            ...
    """

    state: Any


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended: ``status`` is ``"completed"`` or ``"active"`` (stopped early).

    ``step`` is the last committed step and ``state`` its state (blob references in it
    are not loaded; use ``run.load(...)``).
    """

    run_id: UUID
    status: str
    step: int
    state: Any = field(repr=False)


@dataclass(frozen=True, slots=True)
class Recovered:
    """One orphan a recovery worker claimed: what its factory returned, or what it raised."""

    run_id: UUID
    agent_id: str
    epoch: int
    result: Any = None
    error: BaseException | None = None
