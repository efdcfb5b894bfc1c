"""A step's commit as the run loop decides it before any I/O, and a step's retry tally.

The run loop (``loop_async.py`` and its generated twin) prepares each step's commit in
one go (redaction, the changed members, the offload decision, and, in an overlapped run,
the store's plan), sends it, then settles it (the loop's own view of the run). Between
the three the overlapped loop computes the next step, so everything the settling reads of
the state is read while preparing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentckpt._core.plan import Head, Plan
from agentckpt.redaction import Redaction
from agentckpt.runs.offload import PendingBlob

__all__ = ["PreparedStep", "Tally"]


@dataclass(slots=True, eq=False)
class PreparedStep:
    """One step's commit, decided: what it stores and how it goes."""

    number: int
    # The step it builds on (None: step 0), its expected head.
    parent: int | None
    # The state as stored (blob references in place of offloaded values, redacted).
    state: Any
    # The object the step function was given (None for step 0).
    given: Any
    # Transient failures of this step so far (its attempt, for the audit event).
    failures: int
    epoch: int
    # The steady path: the store's head this commits after, and what changed against it.
    head: Head | None
    differs: bytes | None
    encodings: list[bytes] | None
    pending: list[PendingBlob]
    redacted: list[Redaction]
    # The blob URIs the stored state references (None: the loop's set is unchanged).
    known: set[str] | None
    # The step after the store's cached head, nothing offloaded or recorded: committed
    # through the store's steady-state entry.
    steady: bool = False
    # The store's plan, made while preparing (overlapped runs' steady path only).
    plan: Plan | None = None
    finish: bool = False
    # Overlap: the stored state was handed to the next step as it is (not copied).
    lent: bool = False

    @property
    def owned(self) -> bool:
        """The step returned the object it was given, as stored: the loop's own."""
        return self.given is not None and self.state is self.given


@dataclass(slots=True)
class Tally:
    """The failed attempts of the step being retried: transient ones, and the current
    outage's (when it began, monotonic seconds, and its retries so far)."""

    failures: int = 0
    outage: float | None = None
    outage_retries: int = field(default=0)

    @property
    def attempt(self) -> int:
        """The attempt the next try is."""
        return self.failures + self.outage_retries + 1

    def reset(self) -> None:
        """A step was committed: the next one starts afresh."""
        self.failures, self.outage, self.outage_retries = 0, None, 0
