"""Read-only views of a store for the command line and the inspector.

Listings with sizes, pages of runs (:func:`page_runs`: a filter, keyset cursors, the
count of matching runs), usage by agent and day, per-table storage, the rows framework
integrations keep, and every kept state of a run rebuilt in one pass over its stored
chain (snapshot, then deltas applied in order, each checked against its stored
checksum). All of it runs the named queries in ``sql/*/ops.sql``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentckpt._core.metadata import decode_metadata
from agentckpt._core.plan import replay
from agentckpt._core.timestamps import iso_utc
from agentckpt._core.writes import Row
from agentckpt.crypto.sealing import STEP
from agentckpt.errors import InvalidValueError, StoreError
from agentckpt.ops import queries
from agentckpt.ops.kinds import unpack_payload
from agentckpt.store.arguments import check_text
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
    rid = as_run_id(run_id)
    return store.open_rows(
        STEP, store.backend.read(queries.EXPORT_STEPS, {"run_id": rid}), run_id=rid
    )


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


# -- pages of runs ---------------------------------------------------------------------

# How long an active conversation may go without a heartbeat before it is an orphan.
ORPHAN_AFTER_SECONDS = 300.0
RUN_FLAGS = ("open-turn", "lease-expired", "orphan", "attention")
"""The flags :class:`RunFilter` selects on (``attention``: any of the others)."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a listing shows; every field is optional (None: no condition).

    ``search`` matches part of the run id, the agent id, a LangGraph thread id or an
    Agents SDK session id, ignoring case. ``updated_within`` keeps runs updated in the
    last that many seconds, ``idle_seconds`` those not updated for that long. ``flag``
    is one of :data:`RUN_FLAGS`: an open head step, an active run whose lease expired, an
    active conversation with no heartbeat for ``orphan_after`` seconds, or any of them.
    """

    kind: str | None = None
    status: str | None = None
    agent_id: str | None = None
    search: str | None = None
    updated_within: float | None = None
    idle_seconds: float | None = None
    flag: str | None = None
    orphan_after: float = ORPHAN_AFTER_SECONDS

    def __post_init__(self) -> None:
        # A U+0000 would be PostgreSQL's own error (its text cannot hold one) and only a
        # miss on SQLite: refused alike, as the store refuses it in its own filters.
        for name in ("kind", "status", "agent_id", "search"):
            check_text(name, getattr(self, name), optional=True)
        if self.flag is not None and self.flag not in RUN_FLAGS:
            raise InvalidValueError("", f"flag {self.flag!r} is not one of {', '.join(RUN_FLAGS)}")
        for name in ("updated_within", "idle_seconds", "orphan_after"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise InvalidValueError("", f"{name} must be a number of seconds >= 0, got {value}")

    def params(self) -> dict[str, Any]:
        """The named queries' parameters for this filter."""
        search = None
        if self.search:
            escaped = self.search.lower().replace("\\", "\\\\").replace("%", "\\%")
            search = "%" + escaped.replace("_", "\\_") + "%"
        return {
            "kind": self.kind,
            "status": self.status,
            "agent_id": self.agent_id,
            "search": search,
            "updated_within": self.updated_within,
            "idle_seconds": self.idle_seconds,
            "flag": self.flag,
            "orphan_after": float(self.orphan_after),
        }


@dataclass(frozen=True, slots=True)
class RunCursor:
    """Where a page of runs ends: the last run's ``updated_at`` and id. The next page
    starts after it. :meth:`to_text` is what a URL or ``--after`` carries."""

    updated_at: datetime
    run_id: UUID

    def to_text(self) -> str:
        """``<updated_at ISO 8601, UTC, microseconds>,<run id>``, in the timestamp format
        every listing prints (``...Z``)."""
        return f"{iso_utc(self.updated_at, precise=True)},{self.run_id}"

    @classmethod
    def parse(cls, text: str) -> RunCursor:
        """A cursor from :meth:`to_text`; :class:`InvalidValueError` names a bad one."""
        moment, _, run = text.rpartition(",")
        try:
            when = datetime.fromisoformat(moment)
            rid = UUID(run)
        except ValueError:
            raise InvalidValueError(
                "", f"cursor {text!r} is not <updated_at>,<run id> from a previous page"
            ) from None
        return cls(when if when.tzinfo else when.replace(tzinfo=UTC), rid)


@dataclass(frozen=True, slots=True)
class ListedRun:
    """A run on a page: its sizes, its metadata and what recovery would find.

    ``lease_expired``: active with its lease expired; ``orphaned``: an active
    conversation with no heartbeat for the filter's ``orphan_after`` seconds.
    """

    summary: RunSummary
    metadata: dict[str, Any]
    heartbeat_at: datetime
    lease_epoch: int
    lease_expired: bool
    orphaned: bool

    @property
    def run_id(self) -> UUID:
        """The run's id."""
        return self.summary.run_id

    @property
    def flags(self) -> list[str]:
        """The run's flags, by name (see :data:`RUN_FLAGS`)."""
        names = []
        if self.summary.head_open:
            names.append("open-turn")
        if self.lease_expired:
            names.append("lease-expired")
        if self.orphaned:
            names.append("orphan")
        return names


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of runs, newest update first; ``matching`` counts every run the filter
    matches (all pages); ``next`` starts the following page, None on the last."""

    runs: list[ListedRun]
    matching: int
    next: RunCursor | None


MAX_PAGE = 1000


def page_runs(
    store: Store,
    where: RunFilter | None = None,
    *,
    after: RunCursor | str | None = None,
    limit: int = 50,
) -> RunPage:
    """A page of the runs ``where`` matches, most recently updated first, after the
    ``after`` cursor (the previous page's ``next``; text as :meth:`RunCursor.to_text`).

    Keyset paging: each page costs the same wherever it is, and a run updated meanwhile
    moves to the front (it may then be missed by a walk already past it, never shown
    twice on one page).
    """
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidValueError("", f"limit must be from 1 to {MAX_PAGE}, got {limit}")
    cursor = RunCursor.parse(after) if isinstance(after, str) else after
    params = (where or RunFilter()).params() | {
        "after_updated_at": cursor.updated_at.astimezone(UTC).isoformat() if cursor else None,
        "after_run_id": cursor.run_id if cursor else None,
        "limit": limit + 1,
    }
    rows = store.backend.read(queries.RUN_PAGE, params)
    matching = int(rows[0]["matching_runs"]) if rows else 0
    rows = store.sealing.open_run_rows(rows)  # encrypted metadata values, opened
    listed = [_listed(row) for row in rows if row["run_id"] is not None]
    more = len(listed) > limit
    listed = listed[:limit]
    last = listed[-1] if listed else None
    following = RunCursor(last.summary.updated_at, last.run_id) if more and last else None
    return RunPage(listed, matching, following)


def _listed(row: Row) -> ListedRun:
    summary = RunSummary(
        **{f.name: row[f.name] for f in _SUMMARY_FIELDS} | {"head_open": bool(row["head_open"])}
    )
    return ListedRun(
        summary=summary,
        metadata=decode_metadata(row["metadata"]),
        heartbeat_at=row["heartbeat_at"],
        lease_epoch=int(row["lease_epoch"]),
        lease_expired=bool(row["lease_expired"]),
        orphaned=bool(row["orphaned"]),
    )


@dataclass(frozen=True, slots=True)
class DailyUsage:
    """Tokens and cost an agent's runs created on one day (UTC) have recorded in their
    metadata (``input_tokens``, ``output_tokens``, ``cost_estimate_usd``)."""

    agent_id: str
    day: str
    runs: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


def usage_by_day(
    store: Store, where: RunFilter | None = None, *, limit: int = 60
) -> list[DailyUsage]:
    """Usage of the runs ``where`` matches, by agent and day, newest day first."""
    rows = store.backend.read(
        queries.USAGE_BY_DAY, (where or RunFilter()).params() | {"limit": limit}
    )
    return [
        DailyUsage(
            agent_id=row["agent_id"],
            day=str(row["day"]),
            runs=int(row["runs"]),
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            cost_usd=float(row["cost_usd"]),
        )
        for row in rows
    ]


# -- windows of kept steps ---------------------------------------------------------------


def kept_window(store: Store, run_id: UUID | str, first: int, last: int) -> list[KeptStep]:
    """The kept steps from ``first`` to ``last`` with their states, rebuilt from the newest
    snapshot at or before ``first`` (the steps before ``first`` are not returned)."""
    rid = as_run_id(run_id)
    rows = store.backend.read(queries.STEPS_WINDOW, {"run_id": rid, "first": first, "last": last})
    return [kept for kept in kept_states(rid, rows) if kept.step >= first]


# -- rows framework integrations keep ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThreadCheckpoint:
    """A LangGraph checkpoint: its id, the step that stores it, its parent's id and its
    metadata (exact JSON text as stored)."""

    checkpoint_id: str
    step: int
    parent_id: str | None
    metadata: str


@dataclass(frozen=True, slots=True)
class StoredWrite:
    """A write pending against a checkpoint (LangGraph's ``put_writes``), as stored: the
    serializer's type and bytes (decompressed)."""

    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    task_path: str
    type: str
    data: bytes


def thread_checkpoints(store: Store, run_id: UUID | str) -> list[ThreadCheckpoint]:
    """The checkpoints a LangGraph run stores, by checkpoint id."""
    rows = store.backend.read(queries.EXPORT_STEP_INDEX, {"run_id": as_run_id(run_id)})
    return [
        ThreadCheckpoint(row["checkpoint_id"], int(row["step"]), row["parent_id"], row["metadata"])
        for row in rows
    ]


def stored_writes(store: Store, run_id: UUID | str) -> list[StoredWrite]:
    """The pending writes a LangGraph run stores, by checkpoint, task and index."""
    rid = as_run_id(run_id)
    return [
        StoredWrite(
            checkpoint_id=row["checkpoint_id"],
            task_id=row["task_id"],
            idx=int(row["idx"]),
            channel=row["channel"],
            task_path=row["task_path"],
            type=row["type"],
            data=unpack_payload(
                row["codec"],
                bytes(row["payload"]),
                where=f"run {rid} write {row['checkpoint_id']}/{row['task_id']}/{row['idx']}",
            ),
        )
        for row in store.backend.read(queries.EXPORT_STEP_WRITES, {"run_id": rid})
    ]
