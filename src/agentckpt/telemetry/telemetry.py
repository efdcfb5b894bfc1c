"""The store's spans, metrics and logs: one :class:`Telemetry` object per application.

It records through the OpenTelemetry API (the ``otel`` extra), which is a no-op until
the application installs an SDK: with no provider set and no Prometheus endpoint, every
hook costs one attribute check. Pass providers explicitly (tests, several pipelines in
one process) or let it use the global ones set by ``trace.set_tracer_provider`` and
``metrics.set_meter_provider``; they are looked up again until found, so an SDK
installed after the store was opened still gets the store's telemetry.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from agentckpt._version import __version__
from agentckpt.errors import ConfigurationError
from agentckpt.telemetry import _otel
from agentckpt.telemetry.catalogue import METRICS, MetricSpec
from agentckpt.telemetry.probes import CommitProbe, Timed, retry_attempt
from agentckpt.telemetry.spans import (
    NOOP,
    RootSampling,
    drops_unsampled_children,
    open_span,
    root_sampling,
)

if TYPE_CHECKING:
    from agentckpt.telemetry.prometheus import PrometheusMetrics

__all__ = ["Telemetry"]

Attributes = dict[str, Any]

FLUSH_EVERY = 64
"""Histogram observations held before they are handed to the OpenTelemetry SDK in one
loop (see :meth:`Telemetry.record`)."""
# (attributes, value) points of an observable metric, read at collection time.
Observation = tuple[Attributes, float]


class Telemetry:
    """Where agentckpt's spans and metrics go, and the slow-commit threshold.

    ``tracer_provider`` / ``meter_provider``: OpenTelemetry SDK providers; None uses the
    global ones (when ``use_global``), and nothing is recorded while there are none.
    ``prometheus``: a :class:`~agentckpt.telemetry.prometheus.PrometheusMetrics` that
    gets every metric too (``agentckpt metrics serve`` and :func:`serve_metrics`).
    ``slow_commit``: a commit slower than this many seconds is logged at WARNING on
    ``agentckpt.store`` with its run id and step (None: never).

    Example::

        telemetry = Telemetry(tracer_provider=provider, meter_provider=meters)
        store = Store.connect("sqlite:///agents.db", telemetry=telemetry)
    """

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        prometheus: PrometheusMetrics | None = None,
        slow_commit: float | None = 1.0,
        use_global: bool = True,
    ) -> None:
        if slow_commit is not None and not slow_commit >= 0:
            raise ConfigurationError(f"slow_commit must be >= 0 seconds, got {slow_commit!r}")
        self.slow_commit = slow_commit
        self.prometheus = prometheus
        self._use_global = use_global
        self._tracer: Any = None
        # True when the tracer provider drops children of spans that are not sampled:
        # then no span is started inside such a trace (see tracing()).
        self._prunes = False
        # The sampler's decision for root spans, when it can be taken before starting
        # one (see RootSampling): None while unknown or not possible.
        self._roots: RootSampling | None = None
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._instruments: dict[str, Any] | None = None
        self._lock = threading.Lock()
        # Backends whose connection pools the observable metrics read (weakly: a closed
        # and dropped store leaves the set by itself).
        self._pools: weakref.WeakSet[Any] = weakref.WeakSet()
        # Counter totals, kept here and read by the exporters at collection time: an
        # addition is then a dict update, where the SDK's own counter costs tens of
        # microseconds on the commit path.
        self._totals: dict[tuple[str, tuple[tuple[str, Any], ...]], float] = {}
        self._totals_lock = threading.Lock()
        # Histogram observations not yet handed to the SDK: (instrument, value,
        # attributes, context). A deque: appends and pops are atomic across threads.
        self._held: deque[tuple[Any, float, Attributes, Any]] = deque()
        if prometheus is not None:
            prometheus.attach(self)

    # -- tracing ---------------------------------------------------------------------

    def tracer(self) -> Any:
        """The OpenTelemetry tracer, or None while there is no provider."""
        if self._tracer is not None:
            return self._tracer
        provider = self._tracer_provider
        if provider is None and self._use_global:
            provider = _otel.global_tracer_provider()
        if provider is None:
            return None
        self._prunes = drops_unsampled_children(provider)
        tracer = provider.get_tracer("agentckpt", __version__)
        self._roots = root_sampling(tracer)
        self._tracer = tracer
        return tracer

    def tracing(self) -> Any:
        """The tracer for a span started now, or None when none would be recorded.

        None when there is no provider; when the current span is not sampled and the
        provider's sampler drops its children (the SDK's ``ParentBased``, its default);
        and for a root span (no current span) whose trace the sampler will drop, decided
        here on a trace id drawn ahead (:class:`~agentckpt.telemetry.spans.RootSampling`).
        The SDK would only drop either after building a placeholder span of several
        microseconds."""
        tracer = self._tracer if self._tracer is not None else self.tracer()
        if tracer is None or not (self._prunes or self._roots is not None):
            return tracer
        trace = _otel.trace
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:  # a root span
            roots = self._roots
            return tracer if roots is None else roots.tracer()
        if self._prunes and not context.trace_flags.sampled:
            return None
        return tracer

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[Any]:
        """A client span ``name`` with ``attributes``; its exception sets the ERROR status,
        ``error.type`` and an exception event. A shared no-op while tracing is off."""
        tracer = self.tracing()
        if tracer is None:
            return NOOP
        return open_span(tracer, name, attributes)

    # -- metrics ---------------------------------------------------------------------

    def _meters(self) -> dict[str, Any] | None:
        if self._instruments is not None:
            return self._instruments
        provider = self._meter_provider
        if provider is None and self._use_global:
            provider = _otel.global_meter_provider()
        if provider is None:
            return None
        with self._lock:
            if self._instruments is None:
                self._instruments = self._create(provider.get_meter("agentckpt", __version__))
        return self._instruments

    def _create(self, meter: Any) -> dict[str, Any]:
        made: dict[str, Any] = {}
        for spec in METRICS:
            if spec.kind == "histogram":
                made[spec.name] = meter.create_histogram(
                    spec.name,
                    unit=spec.unit,
                    description=spec.description,
                    explicit_bucket_boundaries_advisory=list(spec.buckets),
                )
            else:
                made[spec.name] = meter.create_observable_counter(
                    spec.name,
                    callbacks=[self._callback(spec)],
                    unit=spec.unit,
                    description=spec.description,
                )
        return made

    def _callback(self, spec: MetricSpec) -> Callable[[Any], Iterable[Any]]:
        def observe(options: Any) -> Iterable[Any]:
            # A collection calls every observable callback before it reads the
            # histograms: the held observations reach them first.
            self.flush()
            return [_otel.metrics.Observation(value, attrs) for attrs, value in self.observe(spec)]

        return observe

    @property
    def metering(self) -> bool:
        """True when metrics go somewhere (a meter provider or a Prometheus registry)."""
        return self.prometheus is not None or self._meters() is not None

    def add(self, name: str, amount: float, attributes: Attributes) -> None:
        """Add ``amount`` to the counter ``name`` (exported as a cumulative sum)."""
        key = (name, tuple(attributes.items()))
        with self._totals_lock:
            self._totals[key] = self._totals.get(key, 0) + amount

    def record(self, name: str, value: float, attributes: Attributes, context: Any = None) -> None:
        """Record ``value`` in the histogram ``name`` (``context``: the OpenTelemetry
        context whose span an exemplar refers to; None: the current one).

        The SDK gets the observation later, with up to :data:`FLUSH_EVERY` others in
        one loop, or when a reader collects (every collection sees every observation
        recorded before it), or at :meth:`flush`. One ``Histogram.record`` costs
        microseconds of Python in the SDK, and two to three times as much on a commit
        path that has evicted the SDK's code and data from the CPU's caches than in a
        loop of them; the values, attributes and exemplar contexts are the same, only
        an exemplar's timestamp is the time the SDK got it.
        """
        meters = self._instruments if self._instruments is not None else self._meters()
        if meters is not None:
            held = self._held
            if context is None:
                context = _otel.context.get_current()
            held.append((meters[name], value, attributes, context))
            if len(held) >= FLUSH_EVERY:
                self.flush()
        if self.prometheus is not None:
            self.prometheus.record(name, value, attributes)

    def flush(self) -> None:
        """Hand the histogram observations held by :meth:`record` to the SDK now."""
        held = self._held
        pop = held.popleft
        while held:
            try:
                instrument, value, attributes, context = pop()
            except IndexError:  # another thread took the last one
                return
            instrument.record(value, attributes, context)

    # -- observable metrics (connection pools) ---------------------------------------

    def watch_pool(self, backend: Any) -> None:
        """Publish the reconnects and pool wait time of ``backend`` (PostgreSQL)."""
        if callable(getattr(backend, "pool_stats", None)):
            self._pools.add(backend)

    def observe(self, spec: MetricSpec) -> list[Observation]:
        """The current points of a counter: its totals per attributes, or for the pool
        metrics the pools' own totals, summed per ``db.system``."""
        if spec.kind == "counter":
            with self._totals_lock:
                return [
                    (dict(attributes), value)
                    for (name, attributes), value in self._totals.items()
                    if name == spec.name
                ]
        total = 0.0
        seen = False
        for backend in list(self._pools):
            # psycopg_pool's own running totals (get_stats does not reset them).
            stats = backend.pool_stats()
            seen = True
            if spec.name == "agentckpt.reconnects":
                total += stats.get("connections_lost", 0) + stats.get("returns_bad", 0)
            elif spec.name == "agentckpt.pool.wait_time":
                total += stats.get("requests_wait_ms", 0) / 1000.0
        return [({"db.system": "postgresql"}, total)] if seen else []

    # -- the store's hooks -----------------------------------------------------------

    def commit(self, db_system: str, run_id: object, step: int | None) -> CommitProbe:
        """Wrap one store commit: its span, duration, outcome, bytes, conflicts, slow log."""
        return CommitProbe(self, db_system, run_id, step)

    def timed(
        self, span: str, histogram: str, attributes: Attributes
    ) -> AbstractContextManager[Any]:
        """A span plus its duration in ``histogram`` (with ``db.system`` and ``outcome``)."""
        return Timed(self, span, histogram, attributes)

    def counter_listener(self, db_system: str) -> Callable[[str, int, dict[str, object]], None]:
        """A :meth:`Counters.subscribe` listener publishing the store's event counts."""

        def listen(name: str, amount: int, attributes: dict[str, object]) -> None:
            # lost_steps: how many acknowledged steps went (the run id stays out of the
            # metric: one label value per run would grow without bound).
            if name == "lost_steps":
                self.add("agentckpt.acknowledged_steps_lost", amount, {"db.system": db_system})

        return listen

    def retried(self, db_system: str, exc: BaseException, retry: int) -> None:
        """An outage retry is about to happen: count it."""
        self.add("agentckpt.retries", 1, {"db.system": db_system, "error.type": type(exc).__name__})

    def step_retried(self, db_system: str, exc: BaseException) -> None:
        """The run loop is about to retry a step whose function raised the transient
        ``exc`` (its retry policy; outage retries are :meth:`retried`): count it."""
        self.add(
            "agentckpt.step_retries", 1, {"db.system": db_system, "error.type": type(exc).__name__}
        )

    def attempt(self, retry: int) -> AbstractContextManager[None]:
        """Mark the store calls in the ``with`` body as retry number ``retry`` of their
        operation: their spans get ``agentckpt.retry_count`` (a no-op for 0)."""
        return retry_attempt(retry)
