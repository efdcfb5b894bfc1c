"""Every span, metric and logger agentckpt emits, in one table each.

Counters are OpenTelemetry *observable* counters (cumulative sums read at collection
time from totals the :class:`~agentckpt.telemetry.Telemetry` keeps), so counting costs a
dict update on the commit path; a collector sees them as ordinary monotonic sums.

docs/operations.md lists the same names, and a test checks that it lists all of them.
Metric names follow OpenTelemetry's conventions (dotted, unit in ``unit``); the
Prometheus endpoint publishes each with dots as underscores and the unit as a suffix
(``agentckpt.commit.duration`` in seconds is ``agentckpt_commit_duration_seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LOGGERS", "METRICS", "SPANS", "MetricSpec", "metric"]

MetricKind = Literal["counter", "histogram", "observable_counter"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric: its OpenTelemetry name, instrument kind, unit, meaning and attributes."""

    name: str
    kind: MetricKind
    unit: str
    description: str
    attributes: tuple[str, ...]
    # Histogram bucket bounds (OpenTelemetry advisory and Prometheus buckets alike).
    buckets: tuple[float, ...] = ()

    @property
    def prometheus_name(self) -> str:
        """The name on the Prometheus endpoint."""
        base = self.name.replace(".", "_")
        suffix = {"s": "_seconds", "By": "_bytes"}.get(self.unit, "")
        return base + suffix


_LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BATCH = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "agentckpt.commit.duration",
        "histogram",
        "s",
        "Time of a store commit, from the call to its acknowledgement or error",
        ("db.system", "outcome"),
        _LATENCY,
    ),
    MetricSpec(
        "agentckpt.commit.written",
        "counter",
        "By",
        "Stored (compressed) payload bytes of acknowledged steps",
        ("db.system", "step.kind"),
    ),
    MetricSpec(
        "agentckpt.commit.batch_size",
        "histogram",
        "{commit}",
        "Commits sent together in one group-commit batch (one transaction)",
        ("db.system",),
        _BATCH,
    ),
    MetricSpec(
        "agentckpt.conflicts",
        "counter",
        "{conflict}",
        "Commits refused: type stale_head, step_conflict or fenced",
        ("db.system", "type"),
    ),
    MetricSpec(
        "agentckpt.retries",
        "counter",
        "{retry}",
        "Store calls retried through an outage (the outage policy), by error type",
        ("db.system", "error.type"),
    ),
    MetricSpec(
        "agentckpt.step_retries",
        "counter",
        "{retry}",
        "Run-loop steps retried after their function raised a transient error (the "
        "run's retry policy), by error type",
        ("db.system", "error.type"),
    ),
    MetricSpec(
        "agentckpt.reconnects",
        "observable_counter",
        "{connection}",
        "PostgreSQL connections the pool found lost or broken and replaced",
        ("db.system",),
    ),
    MetricSpec(
        "agentckpt.pool.wait_time",
        "observable_counter",
        "s",
        "Total time callers waited for a PostgreSQL connection from the pool",
        ("db.system",),
    ),
    MetricSpec(
        "agentckpt.resume.duration",
        "histogram",
        "s",
        "Time to read a run's newest state (resume, resume_run, latest)",
        ("db.system", "outcome"),
        _LATENCY,
    ),
    MetricSpec(
        "agentckpt.effect.replays",
        "counter",
        "{effect}",
        "Effects whose recorded result was returned instead of acting again",
        ("db.system",),
    ),
    MetricSpec(
        "agentckpt.orphans.claimed",
        "counter",
        "{run}",
        "Orphaned runs (expired lease) claimed by a recovery worker",
        ("db.system",),
    ),
    MetricSpec(
        "agentckpt.leases.lost",
        "counter",
        "{lease}",
        "Leases found taken over by another worker at a renewal",
        ("db.system",),
    ),
    MetricSpec(
        "agentckpt.acknowledged_steps_lost",
        "counter",
        "{step}",
        "Acknowledged steps found missing (a rollback or an asynchronous failover)",
        ("db.system",),
    ),
)

_BY_NAME = {spec.name: spec for spec in METRICS}


def metric(name: str) -> MetricSpec:
    """The metric called ``name``."""
    return _BY_NAME[name]


# Span name -> what it covers. Attributes: see docs/operations.md.
SPANS: dict[str, str] = {
    "agentckpt.commit": "a store commit (one step), through its acknowledgement",
    "agentckpt.commit_batch": "one group-commit batch: one statement and transaction",
    "agentckpt.resume": "resume/resume_run: the newest snapshot and the steps after it",
    "agentckpt.latest": "latest: the run's newest state",
    "agentckpt.blob.put": "put_blob: one blob written in its own transaction",
    "agentckpt.blob.get": "get_blob: one blob read and verified",
    "agentckpt.lease.acquire": "taking a run's lease",
    "agentckpt.lease.renew": "one heartbeat renewal",
    "agentckpt.lease.lose": "a renewal that found the lease taken over",
    "agentckpt.effect.run": "an effect's action run and its result recorded",
    "agentckpt.effect.replay": "an effect's recorded result returned, the action not run",
    "agentckpt.migrate": "applying pending schema migrations",
}

# Logger name -> what it says.
LOGGERS: dict[str, str] = {
    "agentckpt.store": "slow commits (WARNING), outage retries (INFO), lost acknowledged "
    "steps (ERROR), conflicts are not logged (they are the caller's to handle)",
    "agentckpt.runs": "fencing and lease loss (WARNING), orphan claims and recoveries "
    "(INFO), step retries (INFO), retention applied by the recovery worker (INFO)",
    "agentckpt.conversation": "conversations claimed by a recovery worker (INFO)",
    "agentckpt.ops": "retention: each batch deleted (INFO)",
    "agentckpt.inspector": "the inspector's requests and errors",
}
