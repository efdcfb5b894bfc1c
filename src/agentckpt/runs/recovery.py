# GENERATED from recovery_async.py by scripts/unasync.py; do not edit.
"""The recovery worker: finds orphaned runs (lease expired), claims and resumes them.

``recovery.py`` is generated from ``recovery_async.py`` by ``scripts/unasync.py``:
edit ``recovery_async.py``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from agentckpt import _compat
from agentckpt.errors import ConfigurationError
from agentckpt.ops.retention import apply_retention
from agentckpt.ops.retention_rules import Retention, RetentionPolicy, RetentionReport
from agentckpt.runs.lease_terms import Lease, default_owner, validate_ttl
from agentckpt.runs.leases import Leases
from agentckpt.runs.loop import AgentRun
from agentckpt.runs.results import Recovered
from agentckpt.store.store import Store

__all__ = ["RecoveryWorker"]

log = logging.getLogger("agentckpt.runs")

Factory = Callable[[AgentRun], Any]


class RecoveryWorker:
    """Resumes runs whose worker died, through factories registered per agent id.

    A run is an orphan when it is ``active`` and its lease has expired (its worker
    crashed, froze, or released it without finishing). The worker claims one orphan at a
    time with a single conditional UPDATE (``FOR UPDATE SKIP LOCKED`` on PostgreSQL,
    ``BEGIN IMMEDIATE`` on SQLite), so any number of recovery workers may poll together
    and each orphan goes to exactly one. The claim bumps the lease epoch, fencing out the
    old worker should it wake up.

    The factory receives an :class:`AgentRun` that already holds the new lease
    (built with ``run_options``, e.g. ``blobs=`` or ``retry=``) and resumes it::

        def resume_planner(run):
            return run.run(planner_step, max_steps=run_max_steps)

        worker = RecoveryWorker(store, run_options={"blobs": blob_store})
        worker.register("planner", resume_planner)
        worker.recover_once()

    An exception from a factory is logged and reported in the result, and the run's
    lease is left to expire, so the run is tried again (by any worker) only after the
    lease ttl; the worker goes on with the next orphan.

    With ``retention`` (a :class:`~agentckpt.ops.retention_rules.Retention` or policy),
    :meth:`run_forever` also applies it every ``retention_every`` seconds (default an
    hour; the first pass at start), logging what it deleted on ``agentckpt.runs``.
    """

    def __init__(
        self,
        store: Store,
        *,
        owner: str | None = None,
        lease_ttl: float = 30.0,
        kind: str = "run",
        run_options: dict[str, Any] | None = None,
        retention: Retention | RetentionPolicy | None = None,
        retention_every: float = 3600.0,
    ) -> None:
        if kind == "conversation":
            raise ConfigurationError(
                "conversations are resumed by agentckpt.conversation."
                "ConversationRecoveryWorker (its factories answer the pending user "
                "message), not by RecoveryWorker, which resumes run loops"
            )
        self.store = store
        self.owner = owner or default_owner()
        self.lease_ttl = validate_ttl(lease_ttl)
        self.kind = kind
        self.run_options = dict(run_options or {})
        self._factories: dict[str, Factory] = {}
        self._leases = Leases(store)
        self.retention = retention
        self.retention_every = retention_every
        self._retention_due = 0.0  # monotonic time of the next pass

    def register(self, agent_id: str, factory: Factory) -> None:
        """Resume orphaned runs of ``agent_id`` with ``factory``."""
        self._factories[agent_id] = factory

    def recover_once(self, *, limit: int = 10) -> list[Recovered]:
        """Claim and resume orphans one at a time, at most ``limit``; what happened to each.

        One at a time, so a claimed run never waits with its lease ticking while another
        is being resumed.
        """
        done: list[Recovered] = []
        if not self._factories:
            return done
        while len(done) < limit:
            claimed = self._leases.claim_orphans(
                self.owner,
                self.lease_ttl,
                kind=self.kind,
                agent_ids=sorted(self._factories),
                limit=1,
            )
            if not claimed:
                break
            run_id, lease = claimed[0]
            done.append(self._resume(run_id, lease))
        return done

    def _resume(self, run_id: UUID, lease: Lease) -> Recovered:
        info = self.store.get_run(run_id)
        factory = self._factories[info.agent_id]
        run = AgentRun(
            self.store,
            run_id,
            agent_id=info.agent_id,
            kind=info.kind,
            lease=lease,
            **self.run_options,
        )
        log.info("recovering run %s of %r at epoch %d", run_id, info.agent_id, lease.epoch)
        try:
            run.open()
            result = factory(run)
        except Exception as exc:
            log.exception("recovery of run %s failed", run_id)
            # Keep the lease until it expires: the run is retried after its ttl, not in a
            # tight loop by this same pass.
            run.close(release=False)
            return Recovered(run_id, info.agent_id, lease.epoch, error=exc)
        except BaseException:
            run.close(release=False)
            raise
        run.close()
        return Recovered(run_id, info.agent_id, lease.epoch, result=result)

    def apply_retention_if_due(self) -> RetentionReport | None:
        """Apply the retention policy if its time has come; what it did (None: not due)."""
        if self.retention is None or time.monotonic() < self._retention_due:
            return None
        self._retention_due = time.monotonic() + self.retention_every
        try:
            report = apply_retention(self.store, self.retention)
        except Exception:
            # A failed pass is tried again at the next due time; recovery goes on.
            log.exception("retention pass failed")
            return None
        log.info(
            "retention: deleted %d run(s), pruned %d step(s) in %.2f s",
            report.total_runs,
            report.steps_pruned,
            report.seconds,
        )
        return report

    def run_forever(
        self, *, poll_interval: float = 5.0, stop: Callable[[], bool] = lambda: False
    ) -> None:
        """Poll for orphans every ``poll_interval`` seconds until ``stop()`` is true."""
        while not stop():
            self.apply_retention_if_due()
            recovered = self.recover_once()
            if not recovered and not stop():
                _compat.sleep(poll_interval)
