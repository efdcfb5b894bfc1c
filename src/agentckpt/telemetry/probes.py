"""The store's per-call hooks: a commit's span, latency, outcome, bytes and slow log."""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agentckpt.errors import (
    FencedError,
    OutcomeUnknownError,
    StaleHeadError,
    StepConflictError,
    UnavailableError,
)
from agentckpt.telemetry import _otel
from agentckpt.telemetry.spans import NOOP

if TYPE_CHECKING:
    from agentckpt.telemetry.telemetry import Telemetry

__all__ = ["RETRY_COUNT", "CommitProbe", "Timed", "outcome_of", "retry_attempt"]

store_log = logging.getLogger("agentckpt.store")

Attributes = dict[str, Any]
NOOP_NONE: AbstractContextManager[None] = nullcontext()

RETRY_COUNT: ContextVar[int] = ContextVar("agentckpt_retry_count", default=0)
"""Which retry of an outage-policy loop the current call is (0: the first attempt)."""


class _Attempt:
    __slots__ = ("_retry", "_token")

    def __init__(self, retry: int) -> None:
        self._retry = retry
        self._token: Any = None

    def __enter__(self) -> None:
        self._token = RETRY_COUNT.set(self._retry)

    def __exit__(self, *exc_info: object) -> None:
        RETRY_COUNT.reset(self._token)


def retry_attempt(retry: int) -> AbstractContextManager[None]:
    """Mark the calls in the ``with`` body as retry number ``retry`` (their spans get
    ``agentckpt.retry_count``); a no-op for the first attempt."""
    return _Attempt(retry) if retry else NOOP_NONE


def outcome_of(exc: BaseException | None) -> str:
    """The ``outcome`` attribute of a call that raised ``exc`` (None: it succeeded)."""
    if exc is None:
        return "ok"
    if isinstance(exc, FencedError):
        return "fenced"
    if isinstance(exc, StaleHeadError):
        return "stale_head"
    if isinstance(exc, StepConflictError):
        return "step_conflict"
    if isinstance(exc, OutcomeUnknownError):
        return "outcome_unknown"
    if isinstance(exc, UnavailableError):
        return "unavailable"
    return "error"


_CONFLICTS = frozenset({"fenced", "stale_head", "step_conflict"})
_LABELS: dict[tuple[str, str, str], Attributes] = {}


def _labels(db_system: str, key: str, value: str) -> Attributes:
    """``{"db.system": db_system, key: value}``, one shared dict per combination (the
    commit path records a few per commit; building them anew is measurable)."""
    found = _LABELS.get((db_system, key, value))
    if found is None:
        found = _LABELS.setdefault((db_system, key, value), {"db.system": db_system, key: value})
    return found


class Timed:
    """A span plus its duration in a histogram (``db.system`` and ``outcome``)."""

    __slots__ = ("_attributes", "_histogram", "_inner", "_span", "_start", "_telemetry")

    def __init__(
        self, telemetry: Telemetry, span: str, histogram: str, attributes: Attributes
    ) -> None:
        self._telemetry = telemetry
        self._span = span
        self._histogram = histogram
        self._attributes = attributes
        self._inner: AbstractContextManager[Any] = NOOP
        self._start = 0.0

    def __enter__(self) -> Any:
        self._inner = self._telemetry.span(self._span, self._attributes)
        self._start = time.perf_counter()
        return self._inner.__enter__()

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool | None:
        elapsed = time.perf_counter() - self._start
        telemetry = self._telemetry
        if telemetry.prometheus is not None or telemetry._meters() is not None:
            db = self._attributes["db.system"]
            telemetry.record(self._histogram, elapsed, _labels(db, "outcome", outcome_of(exc)))
        return self._inner.__exit__(kind, exc, tb)


class CommitProbe:
    """The context of one commit; the store calls :meth:`done` with what it stored.

    The commit span is created when the commit ends, with every attribute at once and
    the start time taken on entry (``tracer.start_span(..., start_time=...)``), and is
    never made the current span: in the SDK a span costs per call and per attribute
    pass, so one creation with six attributes replaces a creation, a context attach and
    detach, and a second attribute pass. The price is that spans started inside the
    commit (a database driver's own instrumentation, a group-commit batch) are children
    of the caller's span rather than of ``agentckpt.commit``. One ``perf_counter`` pair
    times the commit for the histogram and sets the span's end.
    """

    __slots__ = (
        "_kind",
        "_start",
        "_stored",
        "_telemetry",
        "_tracer",
        "_wall",
        "db_system",
        "run_id",
        "step",
    )

    def __init__(
        self, telemetry: Telemetry, db_system: str, run_id: object, step: int | None
    ) -> None:
        self._telemetry = telemetry
        self.db_system = db_system
        self.run_id = run_id
        self.step = step
        self._kind = ""
        self._stored = 0
        self._start = 0.0
        self._wall = 0
        self._tracer: Any = None

    def __enter__(self) -> CommitProbe:
        tracer = self._telemetry.tracing()
        if tracer is not None:
            self._tracer = tracer
            self._wall = time.time_ns()
        self._start = time.perf_counter()
        return self

    def done(self, step: int, kind: str, stored_bytes: int) -> None:
        """The commit was acknowledged: step ``step`` as a ``kind`` of ``stored_bytes``."""
        self.step = step
        self._kind = kind
        self._stored = stored_bytes

    def _span(self, exc: BaseException | None, outcome: str) -> Any:
        """The commit's span, created and ended now (None when it is not sampled)."""
        attributes: Attributes = {
            "db.system": self.db_system,
            "db.operation.name": "commit",
            "agentckpt.run_id": str(self.run_id),
        }
        if self.step is not None:
            attributes["agentckpt.step"] = self.step
        if exc is None:
            attributes["agentckpt.step.kind"] = self._kind
            attributes["agentckpt.bytes_written"] = self._stored
        else:
            # Success is the UNSET status; a refusal or failure says which.
            attributes["agentckpt.outcome"] = outcome
            attributes["error.type"] = type(exc).__qualname__
        retry = RETRY_COUNT.get()
        if retry:
            attributes["agentckpt.retry_count"] = retry
        trace = _otel.trace
        span = self._tracer.start_span(
            "agentckpt.commit",
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=self._wall,
        )
        if not span.is_recording():
            return None
        if exc is not None:
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
        return span

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        elapsed = time.perf_counter() - self._start
        telemetry = self._telemetry
        outcome = outcome_of(exc)
        span = None if self._tracer is None else self._span(exc, outcome)
        if telemetry.prometheus is not None or telemetry._meters() is not None:
            db = self.db_system
            # With the commit span as context, an exemplar (the SDK's trace_based
            # filter) points at this commit's trace, as if the span were current.
            context = None if span is None else _otel.trace.set_span_in_context(span)
            telemetry.record(
                "agentckpt.commit.duration", elapsed, _labels(db, "outcome", outcome), context
            )
            if exc is None:
                telemetry.add(
                    "agentckpt.commit.written", self._stored, _labels(db, "step.kind", self._kind)
                )
            elif outcome in _CONFLICTS:
                telemetry.add("agentckpt.conflicts", 1, _labels(db, "type", outcome))
        if span is not None:
            span.end(end_time=self._wall + int(elapsed * 1e9))
        if outcome == "fenced":
            store_log.warning(
                "run %s step %s: fenced: the lease epoch is stale, nothing was written",
                self.run_id,
                "(next)" if self.step is None else self.step,
            )
        slow = telemetry.slow_commit
        if slow is not None and elapsed > slow:
            store_log.warning(
                "run %s step %s: slow commit, %.3f s (over %g s; outcome %s)",
                self.run_id,
                "(next)" if self.step is None else self.step,
                elapsed,
                slow,
                outcome,
            )
