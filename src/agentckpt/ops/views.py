"""Read-only views of a store for the command line and the inspector.

Listings with sizes, per-table storage, and every kept state of a run rebuilt in one
pass over its stored chain (snapshot, then deltas applied in order, each checked
against its stored checksum). All of it runs the named queries in ``sql/*/ops.sql``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any
from uuid import UUID

from agentckpt._core.plan import replay
from agentckpt._core.writes import Row
from agentckpt.errors import StoreError
from agentckpt.ops import queries
from agentckpt.store.store import Store, as_run_id


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run with what it stores: rows and bytes per table."""

    run_id: UUID
    kind: str
    agent_id: str
    status: str
    head_step: int | None
    head_open: bool
    snapshot_step: int | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    parent_run_id: UUID | None
    parent_step: int | None
    error: str | None
    config_bytes: int
    step_rows: int
    step_bytes: int
    blob_rows: int
    blob_bytes: int
    history_rows: int
    history_bytes: int
    effect_rows: int
    event_rows: int
    framework_rows: int

    @property
    def stored_bytes(self) -> int:
        """Payload bytes the run keeps: config, steps, blobs and archived history."""
        return self.config_bytes + self.step_bytes + self.blob_bytes + self.history_bytes

    @property
    def rows(self) -> int:
        """Rows the run keeps in all tables, its runs row included."""
        return (
            1
            + self.step_rows
            + self.blob_rows
            + self.history_rows
            + self.effect_rows
            + self.event_rows
            + self.framework_rows
        )

    @property
    def bytes_per_step(self) -> float | None:
        """Stored bytes divided by steps committed: the run's growth rate."""
        if not self.head_step:
            return None
        return self.stored_bytes / self.head_step

    def to_json(self) -> dict[str, Any]:
        """The summary with its derived sizes, for ``--json`` output."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return data | {
            "rows": self.rows,
            "stored_bytes": self.stored_bytes,
            "bytes_per_step": self.bytes_per_step,
        }


_SUMMARY_FIELDS = fields(RunSummary)


def run_summaries(
    store: Store,
    *,
    run_id: UUID | str | None = None,
    agent_id: str | None = None,
    kind: str | None = None,
    status: str | None = None,
    idle_seconds: float | None = None,
    limit: int | None = 100,
) -> list[RunSummary]:
    """Runs, most recently updated first, with their sizes; filters as ``list_runs``."""
    rows = store.backend.read(
        queries.RUN_LISTING,
        {
            "run_id": as_run_id(run_id) if run_id is not None else None,
            "agent_id": agent_id,
            "kind": kind,
            "status": status,
            "idle_seconds": idle_seconds,
            "limit": limit,
        },
    )
    return [RunSummary(**{f.name: row[f.name] for f in _SUMMARY_FIELDS}) for row in rows]


@dataclass(frozen=True, slots=True)
class TableSize:
    """One table: its rows, the payload bytes they hold, and its bytes on disk if known."""

    table: str
    rows: int
    payload_bytes: int
    total_bytes: int | None


def table_sizes(store: Store) -> list[TableSize]:
    """Every agentckpt table's rows and bytes.

    ``total_bytes`` is what the table takes on disk: PostgreSQL's
    ``pg_total_relation_size`` (heap, indexes and TOAST), SQLite's pages of the table and
    its indexes where SQLite has the ``dbstat`` table; None where it is not known.
    """
    rows = store.backend.read(queries.TABLE_SIZES, {})
    try:
        on_disk = {
            row["table_name"]: int(row["total_bytes"])
            for row in store.backend.read(queries.TABLE_BYTES, {})
        }
    except StoreError:
        on_disk = {}  # SQLite built without dbstat
    return [
        TableSize(
            table=row["table_name"],
            rows=int(row["row_count"]),
            payload_bytes=int(row["payload_bytes"]),
            total_bytes=on_disk.get(row["table_name"]),
        )
        for row in rows
    ]


def durability_settings(store: Store) -> dict[str, Any]:
    """The server's (or the SQLite connection's) settings that decide whether an
    acknowledged commit survives a crash, as ``agentckpt doctor`` assesses them."""
    rows = store.backend.read(queries.DURABILITY, {})
    return dict(rows[0]) if rows else {}


def replication_state(store: Store) -> list[dict[str, Any]]:
    """Each standby streaming from the server (PostgreSQL; SQLite has none): its name,
    state, ``sync_state`` and how many WAL bytes it has not flushed yet."""
    return [dict(row) for row in store.backend.read(queries.REPLICATION, {})]


def database_size(store: Store) -> dict[str, Any]:
    """The whole database's size (PostgreSQL: the database; SQLite: the file's pages)."""
    rows = store.backend.read(queries.DATABASE_SIZE, {})
    return dict(rows[0]) if rows else {}


@dataclass(frozen=True, slots=True)
class KeptStep:
    """A kept step's stored row (without its payload) and the state it rebuilds to."""

    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    codec: str
    raw_bytes: int
    stored_bytes: int
    state_bytes: int
    write_version: int
    created_at: datetime
    updated_at: datetime
    state: Any


def stored_chain(store: Store, run_id: UUID | str) -> list[Row]:
    """Every kept step row of a run with its payload, in step order."""
    return store.backend.read(queries.EXPORT_STEPS, {"run_id": as_run_id(run_id)})


def kept_states(run_id: UUID, rows: list[Row]) -> Iterator[KeptStep]:
    """The state at each kept step, rebuilt from ``rows`` (from :func:`stored_chain`).

    Each state is checked against its stored checksum (:func:`~agentckpt._core.plan.replay`).
    States share unchanged parts with the previous one: treat them as read-only.
    """
    for row, state in replay(run_id, rows):
        yield KeptStep(
            step=row["step"],
            parent_step=row["parent_step"],
            kind=row["kind"],
            is_open=bool(row["is_open"]),
            codec=row["codec"],
            raw_bytes=row["raw_bytes"],
            stored_bytes=len(row["payload"]),
            state_bytes=row["state_bytes"],
            write_version=row["write_version"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            state=state,
        )


@dataclass(frozen=True, slots=True)
class StoredState:
    """A run's state at a kept step exactly as stored.

    The tools open stores without state migrations, so a state written by newer code
    (a higher ``version``) is shown as it is, not refused.
    """

    run_id: UUID
    step: int
    state: Any


def stored_state(store: Store, run_id: UUID | str, step: int | None = None) -> StoredState | None:
    """The state at ``step`` (default: the head) in one query; None if the run has no step.

    Raises RunNotFoundError for an unknown run and StepNotFoundError for a step that is
    not kept.
    """
    checkpoint = store.latest(run_id) if step is None else store.state_at(run_id, step)
    if checkpoint is None:
        return None
    return StoredState(run_id=checkpoint.run_id, step=checkpoint.step, state=checkpoint.state)
