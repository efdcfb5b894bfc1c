"""Leases on runs: acquire, renew (the heartbeat), release, finish, and claim orphans.

``leases.py`` is generated from ``leases_async.py`` by ``scripts/unasync.py``:
edit ``leases_async.py``.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import orjson

from agentckpt._compat.background import AsyncTicker
from agentckpt.errors import LeaseHeldError, LeaseLostError, RunNotFoundError
from agentckpt.runs import queries
from agentckpt.runs.lease_terms import Lease, renew_interval, validate_ttl
from agentckpt.store.store_async import AsyncStore

__all__ = ["AsyncHeartbeat", "AsyncLeases"]

log = logging.getLogger("agentckpt.runs")


def _lease(row: dict[str, Any], ttl: float) -> Lease:
    return Lease(
        owner=row["lease_owner"],
        epoch=row["lease_epoch"],
        expires_at=row["lease_expires_at"],
        ttl=ttl,
    )


class AsyncLeases:
    """Lease operations on one store; every one is a single conditional statement."""

    def __init__(self, store: AsyncStore) -> None:
        self.store = store
        self._db = store.backend.dialect

    def _attributes(self, operation: str, run_id: UUID) -> dict[str, Any]:
        return {
            "db.system": self._db,
            "db.operation.name": operation,
            "agentckpt.run_id": str(run_id),
        }

    async def acquire(self, run_id: UUID, owner: str, ttl: float) -> Lease:
        """Take the run's lease (a new epoch), or raise :class:`LeaseHeldError`.

        Succeeds when nobody holds a live lease, or when ``owner`` itself holds it (a
        restarted worker with the same name takes over its own lease at once).
        """
        ttl = validate_ttl(ttl)
        with self.store.telemetry.span(
            "agentckpt.lease.acquire", self._attributes("lease_acquire", run_id)
        ) as span:
            rows = await self.store.backend.write(
                queries.ACQUIRE_LEASE, {"run_id": run_id, "owner": owner, "ttl": ttl}
            )
            if rows:
                span.set_attribute("agentckpt.lease.epoch", rows[0]["lease_epoch"])
                return _lease(rows[0], ttl)
            held = await self.store.backend.read(queries.LEASE_HOLDER, {"run_id": run_id})
            if not held:
                raise RunNotFoundError(f"no run {run_id}")
            raise LeaseHeldError(
                f"run {run_id} is leased by {held[0]['lease_owner']!r} until "
                f"{held[0]['lease_expires_at']}; nothing was written",
                owner=held[0]["lease_owner"],
                expires_at=held[0]["lease_expires_at"],
            )

    async def epoch(self, run_id: UUID) -> int | None:
        """The run's current lease epoch (None if there is no such run)."""
        rows = await self.store.backend.read(queries.LEASE_HOLDER, {"run_id": run_id})
        return int(rows[0]["lease_epoch"]) if rows else None

    async def renew(self, run_id: UUID, lease: Lease) -> Lease | None:
        """Extend the lease by its ttl; None if it was taken over (the epoch moved on)."""
        attributes = {
            **self._attributes("lease_renew", run_id),
            "agentckpt.lease.epoch": lease.epoch,
        }
        with self.store.telemetry.span("agentckpt.lease.renew", attributes) as span:
            rows = await self.store.backend.write(
                queries.RENEW_LEASE,
                {"run_id": run_id, "owner": lease.owner, "epoch": lease.epoch, "ttl": lease.ttl},
            )
            span.set_attribute("agentckpt.lease.lost", not rows)
        if not rows:
            return None
        return Lease(lease.owner, lease.epoch, rows[0]["lease_expires_at"], lease.ttl)

    def lost(self, run_id: UUID, lease: Lease) -> None:
        """Record that the lease was found taken over (a span and the leases.lost count)."""
        attributes = {
            **self._attributes("lease_lose", run_id),
            "agentckpt.lease.epoch": lease.epoch,
        }
        with self.store.telemetry.span("agentckpt.lease.lose", attributes):
            self.store.telemetry.add("agentckpt.leases.lost", 1, {"db.system": self._db})

    async def release(self, run_id: UUID, lease: Lease) -> bool:
        """Give the lease up (it expires now); False if it was no longer ours."""
        rows = await self.store.backend.write(
            queries.RELEASE_LEASE, {"run_id": run_id, "owner": lease.owner, "epoch": lease.epoch}
        )
        return bool(rows)

    async def finish(self, run_id: UUID, lease: Lease, status: str, error: str | None) -> None:
        """Set the run's final status and release the lease, fenced by the lease's epoch.

        Raises :class:`LeaseLostError` (writing nothing) if another worker owns the run.
        """
        rows = await self.store.backend.write(
            queries.FINISH,
            {"run_id": run_id, "epoch": lease.epoch, "status": status, "error": error},
        )
        if not rows:
            log.warning(
                "run %s: fenced: lease epoch %d is stale, the run was not marked %s",
                run_id,
                lease.epoch,
                status,
            )
            raise LeaseLostError(
                f"run {run_id}: lease epoch {lease.epoch} is stale; another worker owns the "
                f"run, so it was not marked {status}"
            )

    async def claim_orphans(
        self, owner: str, ttl: float, *, kind: str, agent_ids: list[str], limit: int
    ) -> list[tuple[UUID, Lease]]:
        """Lease up to ``limit`` active runs of these agents whose lease expired."""
        ttl = validate_ttl(ttl)
        rows = await self.store.backend.write(
            queries.CLAIM_ORPHANS,
            {
                "owner": owner,
                "ttl": ttl,
                "kind": kind,
                "agent_ids": orjson.dumps(agent_ids).decode(),
                "limit": limit,
            },
        )
        for row in rows:
            log.info(
                "run %s: orphan claimed by %r at lease epoch %d",
                row["run_id"],
                owner,
                row["lease_epoch"],
            )
        if rows:
            self.store.telemetry.add(
                "agentckpt.orphans.claimed", len(rows), {"db.system": self._db}
            )
        return [(row["run_id"], _lease(row, ttl)) for row in rows]


class AsyncHeartbeat:
    """Keeps one lease alive by renewing it every ``ttl / 3`` seconds in the background.

    When a renewal finds the lease taken over, ``lost`` becomes True and the heartbeat
    stops; the run loop then stops before its next step. A renewal that fails for
    another reason (the database is briefly unreachable) is logged and tried again.
    """

    def __init__(self, leases: AsyncLeases, run_id: UUID, lease: Lease) -> None:
        self._leases = leases
        self.run_id = run_id
        self.lease = lease
        self.lost = False
        self._ticker = AsyncTicker(
            renew_interval(lease.ttl), self.beat, name=f"agentckpt-heartbeat-{run_id}"
        )

    def start(self) -> None:
        """Start renewing in the background."""
        self._ticker.start()

    async def beat(self) -> bool:
        """Renew once now; False once the lease is lost."""
        renewed = await self._leases.renew(self.run_id, self.lease)
        if renewed is None:
            self.lost = True
            self._leases.lost(self.run_id, self.lease)
            log.warning(
                "run %s: lease epoch %d was taken over; this worker stops writing",
                self.run_id,
                self.lease.epoch,
            )
            return False
        self.lease = renewed
        return True

    async def stop(self) -> None:
        """Stop renewing (the lease is left as it is)."""
        await self._ticker.stop()
