"""Errors of the run loop: what a step raises to steer the loop, and what the loop raises.

Where they sit in agentckpt's exception tree::

    AgentckptError
    ├── TransientError          raised by a step: retry it from the last checkpoint
    ├── FatalError              raised by a step: stop the run and mark it failed
    │   ├── RetriesExhaustedError   a step kept failing transiently; the run is failed
    │   └── RunFailedError          the run was already marked failed
    └── ConflictError
        ├── LeaseHeldError      another worker holds a live lease on the run
        └── FencedError
            └── LeaseLostError  this worker's lease was taken over; nothing more is written

A step function raises :class:`TransientError` (a rate limit, a timeout, a flaky tool)
or :class:`FatalError` (a bad input, a policy refusal); wrap the original with
``raise TransientError("...") from exc`` so the cause is kept.
"""

from __future__ import annotations

from ..errors import AgentckptError, ConflictError, FencedError

__all__ = [
    "FatalError",
    "LeaseHeldError",
    "LeaseLostError",
    "RetriesExhaustedError",
    "RunFailedError",
    "TransientError",
]


class TransientError(AgentckptError):
    """A step failed in a way that may pass: the loop reloads the last checkpoint and retries.

    Retries are bounded by the run's :class:`~agentckpt.runs.RetryPolicy`, with backoff.
    """


class FatalError(AgentckptError):
    """A step failed for good: the loop marks the run failed, records the error, re-raises."""


class RetriesExhaustedError(FatalError):
    """A step raised :class:`TransientError` on every allowed attempt; the run is failed.

    ``__cause__`` is the last :class:`TransientError`.
    """


class RunFailedError(FatalError):
    """The run is marked failed; set its status back to ``active`` to resume it."""


class LeaseHeldError(ConflictError):
    """Another worker holds a live lease on the run; nothing was written.

    ``owner`` is the holder, ``expires_at`` when its lease runs out unless renewed.
    """

    def __init__(self, message: str, *, owner: str | None = None, expires_at: object = None):
        super().__init__(message)
        self.owner = owner
        self.expires_at = expires_at


class LeaseLostError(FencedError):
    """This worker's lease was taken over (its epoch is stale); it writes nothing more."""
