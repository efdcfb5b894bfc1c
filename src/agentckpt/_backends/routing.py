# GENERATED from routing_async.py by scripts/unasync.py; do not edit.
"""Group commit on a Citus store: each batch split by worker, each run routed to its shard.

On one server a batch of commits is one statement (``commit_steps``). On Citus that
statement's ``unnest()`` becomes intermediate results that Citus ships to every worker,
so every batch, even of one commit, was a two-phase commit across all workers. Here a
batch is split by the worker holding each run's shard (``routed_nodes``, cached per run);
each worker's part is one transaction of statements that each filter on one ``run_id``
(one task on one shard), so a transaction touches one worker and Citus commits it
without two-phase commit. A part takes two pipelined round trips (every guard, then
every landed write's rows) and its COMMIT; the parts are sent one after the other on
one connection.

Atomicity is per run, as on one server: a run's guard, blobs, history, prune, seal and
step are in one transaction. A worker that fails mid-batch fails its part, which raises
for the whole batch; the parts already committed on other workers are durable, and their
writers' retries confirm them (commits are idempotent), so no acknowledged commit is
lost and none is acknowledged before its transaction committed.

A shard moved by the rebalancer only makes the cached grouping stale: a part then spans
two workers and Citus falls back to two-phase commit, still atomic.

``routing.py`` is generated from this file by ``scripts/unasync.py``; edit this one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import psycopg

from agentckpt._core.writes import CommitOutcome, Committed, Refused, StepWrite

__all__ = ["CACHE_LIMIT", "ShardRouter"]

# Runs whose worker is remembered; past this the memory starts over (a lookup is one
# cheap query per batch, for the runs it has not seen).
CACHE_LIMIT = 100_000
_STEP_FIELDS = (
    "token",
    "run_id",
    "step",
    "parent_step",
    "kind",
    "is_open",
    "codec",
    "payload",
    "state_version",
    "write_version",
    "raw_bytes",
    "state_bytes",
    "checksum",
    "expected_step",
    "expected_version",
    "epoch",
    "snapshot_step",
    "chain_bytes",
    "prune_below",
    "seal_step",
    "metadata",
)


def step_params(write: StepWrite) -> dict[str, Any]:
    """The scalar parameters of the routed statements for one write."""
    return {name: getattr(write, name) for name in _STEP_FIELDS}


class ShardRouter:
    """Commits batches on a Citus store, one transaction per worker; remembers each
    run's worker (node group)."""

    def __init__(self, queries: dict[str, str], scope: str, scope_params: dict[str, Any]) -> None:
        self._queries = queries
        # The statement that opens each transaction (it sets the tenant, which
        # row-level security reads) and its parameters.
        self._scope = scope
        self._scope_params = scope_params
        self._groups: dict[UUID, int] = {}
        # Writes that committed in a batch another worker's part failed: the batch
        # raised, so group commit sends each write again alone; these answer from here
        # (they are durable) instead of being refused by their own landed head.
        self._landed: dict[tuple[UUID, int, int, bytes], CommitOutcome] = {}

    def parts(
        self, conn: psycopg.Connection[Any], writes: Sequence[StepWrite]
    ) -> list[list[StepWrite]]:
        """The batch split by worker, in the order each worker first appears."""
        unknown = list({w.run_id for w in writes if w.run_id not in self._groups})
        if unknown:
            if len(self._groups) + len(unknown) > CACHE_LIMIT:
                self._groups.clear()
            cur = conn.execute(self._queries["routed_nodes"], {"run_ids": unknown})
            for row in cur.fetchall():
                self._groups[row["run_id"]] = row["groupid"]
        parts: dict[int, list[StepWrite]] = {}
        for write in writes:
            # A run without a shard (not created) is refused by its guard, anywhere.
            parts.setdefault(self._groups.get(write.run_id, -1), []).append(write)
        return list(parts.values())

    def commit(
        self, conn: psycopg.Connection[Any], writes: Sequence[StepWrite]
    ) -> list[CommitOutcome]:
        """Commit ``writes`` (each of another run), one transaction per worker; the
        outcomes are in the order of ``writes``."""
        outcomes: dict[UUID, CommitOutcome] = {}
        todo = []
        for write in writes:
            known = self._landed.pop(_key(write), None)
            if known is None:
                todo.append(write)
            else:
                outcomes[write.run_id] = known
        try:
            for part in self.parts(conn, todo):
                outcomes.update(self._commit_part(conn, part))
        except BaseException:
            if len(self._landed) > CACHE_LIMIT:
                self._landed.clear()
            for write in todo:
                outcome = outcomes.get(write.run_id)
                if isinstance(outcome, Committed):
                    self._landed[_key(write)] = outcome
            raise
        return [outcomes[w.run_id] for w in writes]

    def _commit_part(
        self, conn: psycopg.Connection[Any], part: list[StepWrite]
    ) -> dict[UUID, CommitOutcome]:
        """One worker's writes in one transaction, pipelined: every guard in one round
        trip, then every landed write's rows in a second one."""
        q = self._queries
        landed: dict[UUID, CommitOutcome] = {}
        refused: list[StepWrite] = []
        with conn.transaction(), conn.pipeline() as pipe:
            conn.execute(self._scope, self._scope_params)
            guards = [conn.execute(q["routed_guard"], step_params(w)) for w in part]
            pipe.sync()
            going = []
            for write, cur in zip(part, guards, strict=True):
                if cur.fetchone() is None:
                    refused.append(write)
                else:
                    going.append(write)
            steps = []
            for write in going:
                self._send_rows(conn, write)
                steps.append(conn.execute(q["routed_step"], step_params(write)))
            pipe.sync()
            for write, cur in zip(going, steps, strict=True):
                row = cur.fetchone()
                if row is None:
                    refused.append(write)
                else:
                    landed[write.run_id] = Committed(row["created_at"], row["updated_at"])
        for write in refused:
            probe = {"run_id": write.run_id, "step": write.step}
            with conn.transaction():
                conn.execute(self._scope, self._scope_params)
                cur = conn.execute(q["commit_probe"], probe)
                landed[write.run_id] = Refused(cur.fetchone())
        return landed

    def _send_rows(self, conn: psycopg.Connection[Any], write: StepWrite) -> None:
        """Queue a landed write's blobs, history, prune and seal (before its step)."""
        q = self._queries
        params = step_params(write)
        with conn.cursor() as many:
            if write.blobs:
                blobs = [{"run_id": write.run_id, **_fields(b)} for b in write.blobs]
                many.executemany(q["routed_blob"], blobs)
            if write.history:
                rows = [
                    {"run_id": write.run_id, "step": write.step, **_fields(h)}
                    for h in write.history
                ]
                many.executemany(q["routed_history"], rows)
        if write.prune_below is not None:
            conn.execute(q["routed_prune"], params)
        if write.seal_step is not None:
            conn.execute(q["routed_seal"], params)


def _key(write: StepWrite) -> tuple[UUID, int, int, bytes]:
    return (write.run_id, write.step, write.write_version, write.checksum)


def _fields(row: Any) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
