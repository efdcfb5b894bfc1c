"""The store: runs and their steps on one backend (``store_async.py``, the async source).

``store.py`` is generated from ``store_async.py`` by ``scripts/unasync.py``:
edit ``store_async.py``.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from types import EllipsisType
from typing import Any, NamedTuple, TypeVar
from uuid import UUID

from agentckpt import _compat
from agentckpt._backends.base import AsyncBackend
from agentckpt._backends.factory import open_backend_async
from agentckpt._backends.options import CommitOptions
from agentckpt._backends.sql import load_migrations
from agentckpt._compat import AsyncGroupCommit
from agentckpt._core.blobs import BlobRef, compress, db_uri, decompress, digest_of
from agentckpt._core.codec import DEFAULT_LIMITS, Limits, decode, encode
from agentckpt._core.metadata import decode_metadata
from agentckpt._core.plan import (
    EMPTY_HEAD,
    Head,
    Plan,
    checksum_matches,
    hand_over,
    plan_commit,
    ready,
    rebuild,
)
from agentckpt._core.policy import SnapshotPolicy
from agentckpt._core.versions import StateMigrations
from agentckpt._core.writes import (
    BlobRow,
    CommitOutcome,
    Committed,
    HistoryRow,
    Row,
    StepWrite,
    new_token,
)
from agentckpt.crypto.keyring import UnknownDataKey
from agentckpt.crypto.sealing import BLOB, STEP, Sealing
from agentckpt.crypto.settings import take_settings
from agentckpt.errors import (
    CorruptDataError,
    FencedError,
    InvalidValueError,
    MigrationError,
    NotFoundError,
    RunNotFoundError,
    StaleHeadError,
    StepConflictError,
    StepNotFoundError,
)
from agentckpt.records import Checkpoint, RunInfo, StepInfo
from agentckpt.store import queries
from agentckpt.store.acknowledged import Acknowledged, Counters
from agentckpt.store.arguments import (
    check_commit_size,
    check_count,
    check_mapping,
    check_seconds,
    check_text,
)
from agentckpt.store.keys_async import AsyncKeyTable, open_sealing_async
from agentckpt.store.outage_policy import OutagePolicy
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.defaults import GLOBAL_TELEMETRY
from agentckpt.tenancy.names import DEFAULT_TENANT

RunId = UUID | str
T = TypeVar("T")

# Step numbers and lease epochs are bigint columns.
_MAX_BIGINT = 2**63 - 1
# A run nobody holds a lease on is an orphan for recovery workers this long after it was
# created (the run loop's default lease ttl): time for its creator to open it.
CLAIM_AFTER = 30.0
# Heads kept in memory as delta bases; beyond this many runs the oldest is re-read.
_HEAD_CACHE_SIZE = 256
# The columns of the resume_run query that runs and steps share are the step's; the run's
# come renamed.
_RUN_ALIASES = (
    ("kind", "run_kind"),
    ("parent_step", "run_parent_step"),
    ("created_at", "run_created_at"),
    ("updated_at", "run_updated_at"),
)
# Reads the "version" field of a state for the steps.state_version column; upgrades none.
_VERSION_READER = StateMigrations()


class _InFlight(NamedTuple):
    """A commit whose outcome is unknown: its step, checksum and write token."""

    step: int
    checksum: bytes
    token: bytes


def as_run_id(run_id: RunId) -> UUID:
    """Accept a UUID or its text form; anything else is a clear error."""
    if isinstance(run_id, UUID):
        return run_id
    try:
        return UUID(str(run_id))
    except ValueError:
        raise InvalidValueError("", f"run id {run_id!r} is not a UUID") from None


def check_number(name: str, value: object) -> None:
    """Refuse a step number or epoch the store cannot keep: not an int, negative, or over
    64 bits (they are bigint columns)."""
    if type(value) is not int or not 0 <= value <= _MAX_BIGINT:
        raise InvalidValueError("", f"{name} {value!r} must be an int from 0 to {_MAX_BIGINT}")


def _token(probe: Row) -> bytes | None:
    """The write token of the step a commit probe found (None: no step, or older rows)."""
    stored = probe.get("write_token")
    return None if stored is None else bytes(stored)


def _run_info(row: Row, *, lenient: bool = False) -> RunInfo:
    """A run's record; a config that cannot be decoded is a :class:`CorruptDataError`
    naming the run, or, ``lenient``, an empty config and the reason in ``config_error``."""
    config: Any = {}
    problem = None
    if row["config"] is not None:
        try:
            config = decode(bytes(row["config"]))
        except CorruptDataError as exc:
            problem = f"run {row['run_id']}: its stored config cannot be decoded ({exc})"
            if not lenient:
                raise CorruptDataError(problem) from None
            config = {}
    return RunInfo(
        run_id=row["run_id"],
        kind=row["kind"],
        agent_id=row["agent_id"],
        status=row["status"],
        head_step=row["head_step"],
        head_open=bool(row["head_open"]),
        snapshot_step=row["snapshot_step"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        lease_epoch=row["lease_epoch"],
        heartbeat_at=row["heartbeat_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        parent_run_id=row["parent_run_id"],
        parent_step=row["parent_step"],
        config=config,
        metadata=decode_metadata(row["metadata"]),
        error=row["error"],
        tenant_id=row.get("tenant_id") or DEFAULT_TENANT,
        config_error=problem,
    )


def _step_info(run_id: UUID, row: Row) -> StepInfo:
    stored = row.get("stored_bytes")
    if stored is None:
        stored = len(row["payload"])
    return StepInfo(
        run_id=run_id,
        step=row["step"],
        parent_step=row["parent_step"],
        kind=row["kind"],
        is_open=bool(row["is_open"]),
        codec=row["codec"],
        state_version=row["state_version"],
        write_version=row["write_version"],
        raw_bytes=row["raw_bytes"],
        stored_bytes=stored,
        state_bytes=row["state_bytes"],
        checksum=bytes(row["checksum"]).hex(),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class AsyncStore:
    """Durable runs and steps on SQLite or PostgreSQL.

    A commit returns only once the step is durable; it is idempotent (the same step with
    the same content again is a no-op), refuses to change a committed step, and refuses
    a writer whose view of the run is stale. Reads always go to the database.

    Example::

        async with await AsyncStore.connect("sqlite:///agent.db") as store:
            run = await store.create_run(agent_id="planner")
            await store.commit(run.run_id, {"messages": []})
            checkpoint = await store.latest(run.run_id)
    """

    def __init__(
        self,
        backend: AsyncBackend,
        *,
        policy: SnapshotPolicy | None = None,
        limits: Limits = DEFAULT_LIMITS,
        migrations: StateMigrations | None = None,
        verify: bool = True,
        commit: CommitOptions = CommitOptions(),
        telemetry: Telemetry | None = None,
        sealing: Sealing | None = None,
    ) -> None:
        self.backend = backend
        # The tenant whose rows this store reads and writes (agentckpt.tenancy).
        self.tenant: str = backend.tenant
        # Spans, metrics and the slow-commit log; the global OpenTelemetry providers
        # unless the caller passes its own.
        self.telemetry = telemetry or GLOBAL_TELEMETRY
        self.telemetry.watch_pool(backend)
        self._db = backend.dialect
        # Encryption at rest (agentckpt.crypto): seals values after compression and opens
        # them before decompression; does nothing when the store has no encryption.
        self.sealing = sealing or Sealing()
        self.policy = policy or SnapshotPolicy()
        self.limits = limits
        # None: states are returned as stored. A store holding runs of several formats
        # (conversations, free-form runs) leaves upgrades to each front door.
        self.migrations = migrations
        self.verify = verify
        self._heads: OrderedDict[UUID, Head] = OrderedDict()
        # A sync Store may be shared by threads (framework adapters do); every access to
        # the head cache holds this lock. It is never held across I/O.
        self._heads_lock = threading.Lock()
        self._in_flight: dict[UUID, _InFlight] = {}
        # The head each run will have once its last overlapped write (the run loop's
        # overlap, built by _build_next) lands: the next one may be built on it while
        # that write is still in flight. Dropped with the cached head (_forget).
        self._ahead: dict[UUID, Head] = {}
        # Event counts for a metrics exporter; the highest step acknowledged per run, to
        # notice a head that went backwards (lost acknowledged commits).
        self.counters = Counters()
        self._acknowledged = Acknowledged(self.counters)
        self.counters.subscribe(self.telemetry.counter_listener(self._db))
        # How long the front doors on this store ride out an outage (outage_limit).
        self.outage = OutagePolicy(
            limit=commit.outage_limit,
            observer=lambda exc, retry: self.telemetry.retried(self._db, exc, retry),
        )
        # Concurrent commits of different runs share a statement and a transaction; at
        # most commit_senders batches (each on a connection of its own) are in flight.
        self._group = AsyncGroupCommit(
            self._send_batch,
            concurrency=min(commit.commit_senders, backend.max_batches),
            max_writes=commit.group_commit,
        )

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        migrate: bool = True,
        policy: SnapshotPolicy | None = None,
        limits: Limits = DEFAULT_LIMITS,
        migrations: StateMigrations | None = None,
        verify: bool = True,
        telemetry: Telemetry | None = None,
        **settings: Any,
    ) -> AsyncStore:
        """Open a store for ``url`` and, unless ``migrate=False``, bring its schema up to date.

        ``settings`` are the URL's settings as keywords (``pool_max=20``), which win over
        the URL; an unknown one is a :class:`ConfigurationError`. ``tenant="acme"``
        opens the store for one tenant: it sees and writes only that tenant's runs
        (``docs/security.md``); without it, the tenant ``"default"``. ``telemetry`` says
        where spans and metrics go (default: the global OpenTelemetry providers).
        A schema migrated by a newer agentckpt (a migration this code does not know) is a
        :class:`MigrationError`.
        ``encryption=`` (an :class:`~agentckpt.crypto.Encryption`, or ``env:NAME``/
        ``file:PATH`` in the URL too) encrypts what the store writes (docs/security.md).
        """
        url, encryption = take_settings(url, settings)
        backend, commit = await open_backend_async(url, **settings)
        store = cls(
            backend,
            policy=policy,
            limits=limits,
            migrations=migrations,
            verify=verify,
            commit=commit,
            telemetry=telemetry,
        )
        try:
            if migrate:
                await store.migrate()
            await store._check_schema_version()
            store.sealing = await open_sealing_async(backend, encryption)
        except BaseException:
            await backend.close()
            raise
        return store

    async def _check_schema_version(self) -> None:
        """Refuse a schema migrated by a newer agentckpt (a version this code does not
        know): its tables may hold what this code would misread or overwrite."""
        sql_dir = "sqlite" if self.backend.dialect == "sqlite" else "postgres"
        known = {m.version for m in load_migrations(sql_dir)}
        unknown = sorted(set(await self.backend.applied_migrations()) - known)
        if unknown:
            raise MigrationError(
                f"the database schema has migration(s) {unknown}, newer than this agentckpt "
                f"knows (up to {max(known)}): it was migrated by a newer version; upgrade "
                "agentckpt to use it"
            )

    async def _opened(self, open_values: Callable[[], T]) -> T:
        """``open_values()``, after reloading the data keys once if it names one made
        (by another process) since this store loaded them."""
        try:
            return open_values()
        except UnknownDataKey:
            if self.sealing.keyring is None:
                raise
            await self.refresh_keys()
            return open_values()

    async def refresh_keys(self) -> None:
        """Reload the data keys from the database (ones other processes made since this
        store opened); a no-op for a store without encryption."""
        if self.sealing.keyring is not None:
            await AsyncKeyTable(self.backend).refresh(self.sealing.keyring)

    async def open_rows(
        self, kind: str, rows: list[Row], *, run_id: UUID | None = None, column: str = "payload"
    ) -> list[Row]:
        """Rows read by a room's own query with their sealed values opened (a no-op for
        a store without encryption): the read side of :attr:`sealing`."""
        return await self._opened(
            lambda: self.sealing.open_rows(kind, rows, run_id=run_id, column=column)
        )

    async def _runs(self, rows: list[Row]) -> list[Row]:
        return await self._opened(lambda: self.sealing.open_run_rows(rows))

    async def _send_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        if len(writes) == 1:
            # A lone commit is its commit span's own round trip: no second span for it.
            outcomes = await self.backend.commit_batch(writes)
        else:
            attributes = {
                "db.system": self._db,
                "db.operation.name": "commit_batch",
                "db.operation.batch.size": len(writes),
            }
            with self.telemetry.span("agentckpt.commit_batch", attributes):
                outcomes = await self.backend.commit_batch(writes)
        if self.telemetry.metering:
            self.telemetry.record(
                "agentckpt.commit.batch_size", len(writes), {"db.system": self._db}
            )
        return outcomes

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Wait for the commits being sent, then release the backend's connections."""
        await self._group.wait_idle()
        await self.backend.close()
        # The metrics of this store's last commits reach the SDK now, not at the next
        # collection (a process that never collects again still has them exported
        # at the meter provider's shutdown).
        self.telemetry.flush()

    async def migrate(self) -> list[int]:
        """Apply pending schema migrations; returns the versions applied now."""
        attributes = {"db.system": self._db, "db.operation.name": "migrate"}
        with self.telemetry.span("agentckpt.migrate", attributes) as span:
            applied = await self.backend.migrate()
            span.set_attribute("agentckpt.migrations_applied", len(applied))
        return applied

    # -- runs ------------------------------------------------------------------------

    async def create_run(
        self,
        run_id: RunId | None = None,
        *,
        agent_id: str = "",
        kind: str = "run",
        config: Mapping[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        exist_ok: bool = False,
        parent: tuple[UUID, int] | None = None,
        claim_after: float = CLAIM_AFTER,
    ) -> RunInfo:
        """Create a run (a durable record before its first step) and return it.

        ``config`` is stored exactly (agent config, tool registry, ...). With
        ``exist_ok`` an existing run with this id is returned unchanged. The new run's
        lease expires ``claim_after`` seconds from now: an active run nobody has leased
        by then is an orphan a recovery worker claims (its creator died before opening
        it). Opening it (taking its lease) works at once, whatever ``claim_after``.
        """
        rid = as_run_id(run_id) if run_id is not None else uuid.uuid4()
        check_text("agent_id", agent_id)
        check_text("kind", kind)
        grace = check_seconds("claim_after", claim_after)
        try:
            config_bytes = self.sealing.seal_config(
                encode(dict(check_mapping("config", config)), limits=self.limits)
            )
        except InvalidValueError as exc:
            raise InvalidValueError(exc.path, f"config: {exc.reason}") from None
        rows = await self.backend.write(
            queries.INSERT_RUN,
            {
                "run_id": rid,
                "kind": kind,
                "agent_id": agent_id,
                "config": config_bytes,
                "metadata": self.sealing.encode_metadata(metadata or {}),
                "parent_run_id": parent[0] if parent else None,
                "parent_step": parent[1] if parent else None,
                "claim_after": grace,
            },
        )
        if not rows and not exist_ok:
            raise StepConflictError(f"run {rid} already exists")
        return await self.get_run(rid)

    async def get_run(self, run_id: RunId) -> RunInfo:
        """The run's record; :class:`RunNotFoundError` if there is none."""
        rid = as_run_id(run_id)
        rows = await self.backend.read(queries.GET_RUN, {"run_id": rid})
        if not rows:
            raise RunNotFoundError(f"no run {rid}")
        return _run_info((await self._runs(rows))[0])

    async def list_runs(
        self,
        *,
        agent_id: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        idle_seconds: float | None = None,
        limit: int = 100,
    ) -> list[RunInfo]:
        """Runs, most recently updated first, filtered by agent, kind, status and idleness.

        A run whose stored config cannot be decoded is listed with an empty ``config``
        and the reason, naming it, in ``config_error``.
        """
        check_text("agent_id", agent_id, optional=True)
        check_text("kind", kind, optional=True)
        check_text("status", status, optional=True)
        if idle_seconds is not None:
            check_seconds("idle_seconds", idle_seconds)
        check_count("limit", limit)
        rows = await self.backend.read(
            queries.LIST_RUNS,
            {
                "agent_id": agent_id,
                "kind": kind,
                "status": status,
                "idle_seconds": idle_seconds,
                "limit": limit,
            },
        )
        # One damaged run is reported (config_error), not allowed to fail the listing.
        return [_run_info(row, lenient=True) for row in await self._runs(rows)]

    async def set_status(self, run_id: RunId, status: str, *, error: str | None = None) -> None:
        """Mark a run (``active``, ``completed``, ``failed``, ...), with an optional error."""
        rid = as_run_id(run_id)
        check_text("status", status)
        check_text("error", error, optional=True)
        if not await self.backend.write(
            queries.SET_STATUS, {"run_id": rid, "status": status, "error": error}
        ):
            raise RunNotFoundError(f"no run {rid}")

    async def delete_run(self, run_id: RunId) -> bool:
        """Delete a run and everything stored for it, at once; False if it did not exist."""
        rid = as_run_id(run_id)
        self._forget(rid)
        self._acknowledged.forget(rid)
        return bool(await self.backend.write(queries.DELETE_RUN, {"run_id": rid}))

    # -- steps -----------------------------------------------------------------------

    async def commit(
        self,
        run_id: RunId,
        state: Any,
        *,
        step: int | None = None,
        keep_open: bool = False,
        expected_head: int | EllipsisType | None = ...,
        epoch: int | None = None,
        metadata: dict[str, Any] | None = None,
        blobs: Sequence[BlobRow] = (),
        history: Sequence[HistoryRow] = (),
        policy: SnapshotPolicy | None = None,
        unchanged_prefix: tuple[str, int] | None = None,
        _changed: Sequence[int] | None = None,
    ) -> StepInfo:
        """Commit ``state`` as a step of the run; durable when this returns.

        ``step`` defaults to the step after the head. Committing a step that already
        exists with the same state is a no-op that returns it; with another state it
        raises :class:`StepConflictError`, except for the open head.

        ``keep_open=True`` leaves the step open: the same writer may commit the same
        step number again (each write bumps its ``write_version``) until it commits it
        with ``keep_open=False`` or commits a later step.

        ``expected_head`` (a step number, or None for "no step yet") makes the commit
        fail with :class:`StaleHeadError` unless the run's head is that step. ``epoch``
        fences the write with a lease epoch (:class:`FencedError` when stale).
        ``metadata`` keys replace the run's top-level metadata keys. ``blobs`` (from
        :meth:`prepare_blob`) are written in the same transaction as the step, so a
        step never references a blob that is not stored. ``history`` rows (archived
        parts of the state) are likewise written atomically with the step. ``policy``
        overrides the store's snapshot policy for this commit (a run's own cadence).

        A commit encodes the new state once and diffs and hashes only the top-level
        members whose encoding changed (items appended to a list are found by its
        encoding). ``unchanged_prefix=(key, n)`` goes further for a caller that appends
        to a long list it owns: it promises that ``state[key][:n]`` are the very items
        the step's base holds there, unchanged, so they are neither encoded nor compared
        again. A promise the base contradicts (its list is not ``n`` items long) is
        ignored; a false one would store a state other than ``state``, so only a caller
        that owns those items makes it (the conversation API does).

        ``_changed`` is internal (the run loop's): which members of an object state differ
        from the head's, found by the caller's own ``==``; the commit checks the members
        it calls unchanged by their encodings, so flagging too many only costs the
        general path, but every member that differs by ``==`` must be flagged (an
        unflagged tuple, NaN or enum that encodes like the head's value is not refused).
        """
        with self.telemetry.commit(self._db, run_id, step) as probe:
            info = await self._commit(
                run_id,
                state,
                step=step,
                keep_open=keep_open,
                expected_head=expected_head,
                epoch=epoch,
                metadata=metadata,
                blobs=blobs,
                history=history,
                policy=policy,
                unchanged_prefix=unchanged_prefix,
                changed=_changed,
            )
            probe.done(info.step, info.kind, info.stored_bytes)
        return info

    async def _commit(
        self,
        run_id: RunId,
        state: Any,
        *,
        step: int | None,
        keep_open: bool,
        expected_head: int | EllipsisType | None,
        epoch: int | None,
        metadata: dict[str, Any] | None,
        blobs: Sequence[BlobRow],
        history: Sequence[HistoryRow],
        policy: SnapshotPolicy | None,
        unchanged_prefix: tuple[str, int] | None,
        changed: Sequence[int] | None,
    ) -> StepInfo:
        rid = as_run_id(run_id)
        if step is not None:
            check_number("step", step)
        if epoch is not None:
            check_number("epoch", epoch)
        if expected_head is not None and expected_head is not ...:
            check_number("expected_head", expected_head)
        if blobs or history:
            # With the other arguments, before anything (the head, a retry's record).
            check_commit_size(rid, blobs, history, self.limits)
        with self._heads_lock:
            cached = self._heads.get(rid)
        # A cached head (every commit of a run's writer but its first) without a
        # coroutine of _head's to create and await.
        head = self._ready(rid, cached) if cached is not None else await self._head(rid)
        in_flight = self._in_flight.pop(rid, None)
        # The previous commit of this run failed with its outcome unknown and a step with
        # the same state is the head: a retry of it is that commit (if the step carries its
        # write token), not a new step.
        if (
            in_flight is not None
            and step is None
            and head.step == in_flight.step
            and checksum_matches(state, in_flight.checksum, limits=self.limits)
        ):
            return await self._landed(rid, in_flight.step, in_flight, check=True)
        if expected_head is not ... and expected_head != head.step:
            head = await self._head(rid, reload=True)
            if expected_head != head.step:
                raise StaleHeadError(
                    f"run {rid}: expected head step {expected_head}, the head is {head.step}"
                )
        target = step if step is not None else (1 if head.step is None else head.step + 1)
        if (
            head.step is not None
            and target <= head.step
            and not (target == head.step and head.is_open)
        ):
            return await self._recommit(rid, target, state, in_flight)

        plan = plan_commit(
            rid,
            head,
            state,
            step=target,
            keep_open=keep_open,
            policy=policy or self.policy,
            limits=self.limits,
            prefix_hint=unchanged_prefix,
            changed=changed,
        )
        return await self._write(
            rid,
            head,
            plan,
            state,
            step=step,
            expected_head=expected_head,
            epoch=epoch,
            metadata=metadata,
            blobs=blobs,
            history=history,
            in_flight=in_flight,
        )

    async def _commit_next(
        self,
        head: Head,
        rid: UUID,
        state: Any,
        *,
        epoch: int,
        policy: SnapshotPolicy,
        changed: bytes,
        encoded: Sequence[bytes] | None,
    ) -> StepInfo:
        """Internal (the run loop's steady state): commit ``state`` as the step after
        ``head``, the run's cached sealed head that :meth:`_run_head` gave, fenced by
        ``epoch`` and guarded by that head, as ``commit(rid, state, step=head.step + 1,
        expected_head=head.step, epoch=epoch, policy=policy, _changed=changed)`` does.

        The loop's own numbers need no checks (the step and head come from this store,
        the epoch from the lease's row), and the head was looked up once, by the loop;
        if the cache holds another head by now, or a commit of the run is of unknown
        outcome, it is that general commit. ``encoded``: the strict encodings of the
        members ``changed`` flags, in order, made from these very values by the loop
        (see :func:`~agentckpt._core.plan.plan_commit`). Refusals and errors are the
        general commit's: the same :meth:`_write`.
        """
        step = head.step
        assert step is not None
        with self.telemetry.commit(self._db, rid, step + 1) as probe:
            if self._is_head(rid, head):
                plan = self._plan_next(
                    head, rid, state, policy=policy, changed=changed, encoded=encoded
                )
                info = await self._write(
                    rid,
                    head,
                    plan,
                    state,
                    step=step + 1,
                    expected_head=step,
                    epoch=epoch,
                    metadata=None,
                    blobs=(),
                    history=(),
                    in_flight=None,
                )
            else:
                info = await self._commit(
                    rid,
                    state,
                    step=step + 1,
                    keep_open=False,
                    expected_head=step,
                    epoch=epoch,
                    metadata=None,
                    blobs=(),
                    history=(),
                    policy=policy,
                    unchanged_prefix=None,
                    changed=changed,
                )
            probe.done(info.step, info.kind, info.stored_bytes)
        return info

    def _is_head(self, rid: UUID, head: Head) -> bool:
        """Internal: ``head`` is the run's cached head and no commit of the run is of
        unknown outcome, so a plan against it may be written as it is; no I/O."""
        with self._heads_lock:
            current = self._heads.get(rid)
        return current is head and rid not in self._in_flight

    def _plan_next(
        self,
        head: Head,
        rid: UUID,
        state: Any,
        *,
        policy: SnapshotPolicy,
        changed: bytes,
        encoded: Sequence[bytes] | None,
    ) -> Plan:
        """Internal (the run loop's): the plan of ``state`` as the step after ``head``,
        no I/O. ``head`` may be the head of a plan not yet durable (the loop's
        overlapped steps plan step N+1 while step N's commit is in flight); the plan's
        bytes are made here, so a later change to ``state`` changes nothing it writes."""
        assert head.step is not None
        return plan_commit(
            rid,
            head,
            state,
            step=head.step + 1,
            keep_open=False,
            policy=policy,
            limits=self.limits,
            changed=changed,
            encoded=encoded,
        )

    def _build_next(
        self, head: Head, plan: Plan, rid: UUID, state: Any, *, epoch: int, overlapped: bool = True
    ) -> StepWrite | None:
        """Internal (the overlapped run loop's): the write of ``plan`` (from
        :meth:`_plan_next` against ``head``), built now, for :meth:`_send_next`; None
        when ``head`` is neither the run's cached head nor the head its overlapped write
        in flight will give it (the caller commits the general way).

        Everything the write reads of ``state`` is read here: the caller may hand
        ``state`` to the next step at once. A write built on the head of one still in
        flight is guarded by that head (its step and version): if the write before it
        does not land, the database refuses it and it writes nothing. The write is
        marked ``overlapped``: it never runs on the event loop's own thread (SQLite's
        inline mode), so the loop computes on while it is made durable; unless not
        ``overlapped`` (the loop holds it back and waits for it: :meth:`_send_chain`).
        """
        with self._heads_lock:
            current = self._heads.get(rid)
        if rid in self._in_flight or (head is not current and head is not self._ahead.get(rid)):
            return None
        write, _ = self._step_write(
            rid,
            plan,
            state,
            epoch=epoch,
            metadata=None,
            blobs=(),
            history=(),
            overlapped=overlapped,
        )
        self._ahead[rid] = plan.head
        return write

    def _unbuild(self, rid: UUID) -> None:
        """Internal (the overlapped run loop's): no write :meth:`_build_next` built for
        ``rid`` is in flight or will be sent (the loop dropped them), so none may be
        built on the heads they would have left."""
        self._ahead.pop(rid, None)

    async def _send_next(
        self,
        head: Head,
        plan: Plan,
        write: StepWrite,
        *,
        sent: _compat.AsyncSent | None = None,
    ) -> StepInfo:
        """Internal: send a write of :meth:`_build_next`; its outcome as
        :meth:`_commit_next` gives it. ``sent``: its database outcome, when the write
        was sent already (:meth:`_send_chain`)."""
        with self.telemetry.commit(self._db, write.run_id, plan.step) as probe:
            info = await self._outcome(
                write.run_id,
                head,
                plan,
                write,
                write.token,
                step=plan.step,
                expected_head=head.step,
                epoch=write.epoch,
                in_flight=None,
                sent=sent,
            )
            probe.done(info.step, info.kind, info.stored_bytes)
        return info

    async def _send_chain(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Internal (the overlapped run loop's): send writes of :meth:`_build_next`, a
        run's next steps each built on the one before, together (one transaction when a
        sender is free); their database outcomes, for :meth:`_send_next`'s ``sent``."""
        return await self._group.commit_chain(writes)

    async def _write(
        self,
        rid: UUID,
        head: Head,
        plan: Plan,
        state: Any,
        *,
        step: int | None,
        expected_head: int | EllipsisType | None,
        epoch: int | None,
        metadata: dict[str, Any] | None,
        blobs: Sequence[BlobRow],
        history: Sequence[HistoryRow],
        in_flight: _InFlight | None,
    ) -> StepInfo:
        """Send the write of ``plan`` (against ``head``), then its outcome: the step, or
        the refusal that says why (a retry that landed is the step)."""
        write, token = self._step_write(
            rid, plan, state, epoch=epoch, metadata=metadata, blobs=blobs, history=history
        )
        return await self._outcome(
            rid,
            head,
            plan,
            write,
            token,
            step=step,
            expected_head=expected_head,
            epoch=epoch,
            in_flight=in_flight,
        )

    def _step_write(
        self,
        rid: UUID,
        plan: Plan,
        state: Any,
        *,
        epoch: int | None,
        metadata: dict[str, Any] | None,
        blobs: Sequence[BlobRow],
        history: Sequence[HistoryRow],
        overlapped: bool = False,
    ) -> tuple[StepWrite, bytes]:
        """The write of ``plan`` and its token; no I/O."""
        # Stored with the step: when a guard refuses, it tells this write's own retry
        # from another writer's commit of the same state.
        token = new_token()
        # Unsealed, the payload is packed where the backend sends it (SQLite: on its
        # worker thread, beside the event loop); sealed, here, before it is encrypted.
        stored = self.sealing.seal_payload(STEP, plan.stored)
        write = StepWrite(
            run_id=rid,
            step=plan.step,
            parent_step=plan.parent_step,
            kind=plan.kind,
            is_open=plan.is_open,
            stored=stored,
            state_version=(self.migrations or _VERSION_READER).version_of(state),
            write_version=plan.write_version,
            raw_bytes=plan.raw_bytes,
            state_bytes=plan.state_bytes,
            checksum=plan.checksum,
            expected_step=plan.expected_step,
            expected_version=plan.expected_version,
            epoch=epoch,
            snapshot_step=plan.snapshot_step,
            chain_bytes=plan.chain_bytes,
            prune_below=plan.prune_below,
            seal_step=plan.seal_step,
            metadata=self.sealing.encode_metadata(metadata),
            token=token,
            blobs=tuple(map(self.sealing.seal_blob, blobs)) if blobs else (),
            history=tuple(map(self.sealing.seal_history, history)) if history else (),
            overlapped=overlapped,
        )
        return write, token

    async def _outcome(
        self,
        rid: UUID,
        head: Head,
        plan: Plan,
        write: StepWrite,
        token: bytes,
        *,
        step: int | None,
        expected_head: int | EllipsisType | None,
        epoch: int | None,
        in_flight: _InFlight | None,
        sent: _compat.AsyncSent | None = None,
    ) -> StepInfo:
        """Send ``write`` (of ``plan``, against ``head``) and return its outcome
        (``sent``: the database's, of a write sent already)."""
        target = plan.step
        try:
            outcome = await (self._group.commit(write) if sent is None else sent)
        except BaseException:
            # Outcome unknown: re-read before the next commit, and remember what was in
            # flight, so a retry without an explicit step is recognised if it landed.
            self._forget(rid)
            self._in_flight[rid] = _InFlight(plan.step, plan.checksum, token)
            raise
        if isinstance(outcome, Committed):
            self._remember(rid, plan.head)
            if self._ahead.get(rid) is plan.head:
                del self._ahead[rid]  # no overlapped write of the run in flight now
            self._acknowledged.record(rid, plan.step)
            return StepInfo(
                run_id=rid,
                step=plan.step,
                parent_step=plan.parent_step,
                kind=plan.kind,
                is_open=plan.is_open,
                codec=plan.stored.codec,
                state_version=write.state_version,
                write_version=plan.write_version,
                raw_bytes=plan.raw_bytes,
                stored_bytes=write.stored.size(),
                state_bytes=plan.state_bytes,
                checksum=plan.checksum.hex(),
                created_at=outcome.created_at,
                updated_at=outcome.updated_at,
            )
        self._forget(rid)
        probe = outcome.probe
        if probe is None:
            raise RunNotFoundError(f"no run {rid}; create it with create_run() first")
        self._acknowledged.check(rid, probe["head_step"])
        if epoch is not None and probe["lease_epoch"] != epoch:
            raise FencedError(
                f"run {rid}: lease epoch {epoch} is stale (now {probe['lease_epoch']}); "
                "another worker owns the run, nothing was written"
            )
        if probe["checksum"] is not None and bytes(probe["checksum"]) == plan.checksum:
            if _token(probe) == token:
                return await self._landed(rid, target, in_flight)  # this very write, resent
            if in_flight is not None and in_flight.step == target:
                # The retry of a commit of unknown outcome: it landed if the step is its.
                return await self._landed(rid, target, in_flight, check=True)
            if step is not None and expected_head is ...:
                # A named step with the same state is that step, whoever wrote it.
                return await self._landed(rid, target, in_flight)
            # Another writer read the same head and committed the same state first:
            # taking its step for this one would lose one of the two operations.
            raise StaleHeadError(
                f"run {rid}: another writer committed step {target} (with the same state) "
                f"since this writer read step {head.step}; nothing was written, re-read "
                "the run"
            )
        if probe["checksum"] is not None and not probe["is_open"] and step is not None:
            # Only a step the caller named is "already committed"; a default step number
            # came from a stale head, which the StaleHeadError below reports.
            raise StepConflictError(
                f"run {rid}: step {target} is already committed with other content"
            )
        raise StaleHeadError(
            f"run {rid}: the head moved to step {probe['head_step']} "
            f"(version {probe['head_version']}) since this writer read step {head.step}; "
            "nothing was written, re-read the run"
        )

    async def _recommit(
        self, rid: UUID, step: int, state: Any, in_flight: _InFlight | None
    ) -> StepInfo:
        """A commit of a step at or before a sealed head: a retry, or a conflict."""
        encode(state, limits=self.limits)  # refuse what cannot be stored before any I/O
        rows = await self.backend.read(queries.COMMIT_PROBE, {"run_id": rid, "step": step})
        if rows and rows[0]["checksum"] is not None:
            if checksum_matches(state, bytes(rows[0]["checksum"]), limits=self.limits):
                if in_flight is not None and in_flight.step == step:
                    # The retry of a commit of unknown outcome: the step must be its own.
                    self._check_token(rid, step, rows[0], in_flight)
                return await self._landed(rid, step, in_flight)
            raise StepConflictError(
                f"run {rid}: step {step} is already committed with other content"
            )
        raise StaleHeadError(
            f"run {rid}: step {step} is not after the head step "
            f"{rows[0]['head_step'] if rows else None} and is not kept"
        )

    async def _landed(
        self, rid: UUID, step: int, in_flight: _InFlight | None, *, check: bool = False
    ) -> StepInfo:
        """The step of a commit found already stored: a retry of one that landed.

        With ``check``, the stored step must carry the write token of the attempt of
        unknown outcome (``in_flight``); another token means another writer committed
        the same state there and that attempt did not land (:class:`StaleHeadError`).
        After such an attempt, first a write of the run's own, so the retry returns
        only once that commit is as durable as any (on PostgreSQL, confirmed by the
        synchronous standby that the earlier wait may have given up on); if that fails
        too, the attempt stays in flight.
        """
        if check and in_flight is not None:
            rows = await self.backend.read(queries.COMMIT_PROBE, {"run_id": rid, "step": step})
            self._check_token(rid, step, rows[0] if rows else {}, in_flight)
        if in_flight is not None:
            try:
                await self.backend.write(queries.CONFIRM_COMMIT, {"run_id": rid})
            except BaseException:
                self._in_flight[rid] = in_flight
                raise
        info = await self._step_info(rid, step)
        self._acknowledged.record(rid, step)
        return info

    def _check_token(self, rid: UUID, step: int, probe: Row, in_flight: _InFlight) -> None:
        if _token(probe) != in_flight.token:
            self._forget(rid)
            raise StaleHeadError(
                f"run {rid}: step {step} holds the same state, committed by another writer; "
                "this writer's earlier commit of unknown outcome did not land, nothing was "
                "written, re-read the run"
            )

    async def _step_info(self, rid: UUID, step: int) -> StepInfo:
        for info in await self.steps(rid):
            if info.step == step:
                return info
        raise StepNotFoundError(f"run {rid} has no kept step {step}")

    def _remember(self, rid: UUID, head: Head) -> None:
        with self._heads_lock:
            self._heads[rid] = head
            self._heads.move_to_end(rid)
            while len(self._heads) > _HEAD_CACHE_SIZE:
                self._heads.popitem(last=False)

    def _forget(self, rid: UUID) -> None:
        with self._heads_lock:
            self._heads.pop(rid, None)
        self._ahead.pop(rid, None)

    async def _head(self, rid: UUID, *, reload: bool = False) -> Head:
        if not reload:
            with self._heads_lock:
                cached = self._heads.get(rid)
            if cached is not None:
                return self._ready(rid, cached)
        rows = await self.open_rows(
            STEP,
            await self.backend.read(queries.LOAD_CHAIN, {"run_id": rid, "step": None}),
            run_id=rid,
        )
        if not rows:
            await self.get_run(rid)  # raises RunNotFoundError for an unknown run
            head = EMPTY_HEAD
        else:
            head = rebuild(rid, rows, verify=self.verify)
        self._acknowledged.check(rid, head.step)
        self._remember(rid, head)
        return head

    def _run_head(self, rid: UUID, step: int) -> Head | None:
        """Internal (the run loop's): the run's cached head when that is the sealed step
        ``step``, else None; no I/O.

        Its state is the base the next commit's plan compares with, owned by the store
        (the plan never shares its containers with a caller): read it, never mutate it
        or hand it out. A member the caller's state holds ``==`` to it is unchanged by
        the plan's own comparison, so flags found against it are a ``_changed`` hint
        that flags every member differing by ``==``; :meth:`_commit_next` commits the
        step after it.
        """
        with self._heads_lock:
            cached = self._heads.get(rid)
        if cached is None or cached.step != step or cached.is_open:
            return None
        return self._ready(rid, cached)

    def _base_state(self, rid: UUID, step: int) -> Any:
        """Internal: the state of :meth:`_run_head`, else None; no I/O."""
        head = self._run_head(rid, step)
        return None if head is None else head.state

    def _ready(self, rid: UUID, cached: Head) -> Head:
        """A cached head with its state, decoded now if a resume handed it over."""
        head = ready(cached)
        if head is not cached:
            with self._heads_lock:
                if self._heads.get(rid) is cached:  # not replaced meanwhile
                    self._heads[rid] = head
        return head

    async def resume(self, run_id: RunId) -> Checkpoint | None:
        """Read the run's newest state and make it the base of this store's next commit.

        Like :meth:`latest`, but it also resets the store's view of the run to what the
        database holds now, so the next commit is guarded against exactly this head:
        if another writer moves the run on meanwhile, that commit raises a conflict
        instead of building on a stale state. Use it when a writer (re)starts. Returns
        None when the run has no step yet. :meth:`resume_run` also returns the run's
        record, from the same query.
        """
        _, checkpoint = await self.resume_run(run_id)
        return checkpoint

    async def resume_run(self, run_id: RunId) -> tuple[RunInfo, Checkpoint | None]:
        """:meth:`resume` the run and return its record too, both read in one query.

        The record (what :meth:`get_run` returns) and the state are read at one instant,
        so they agree: the record's head is the checkpoint's step. The checkpoint is None
        when the run has no step yet; :class:`RunNotFoundError` if there is no such run.
        The state is the caller's own copy (the store keeps another as its delta base).
        """
        rid = as_run_id(run_id)
        with self.telemetry.timed(
            "agentckpt.resume", "agentckpt.resume.duration", self._attributes("resume", rid)
        ):
            return await self._resume_run(rid)

    def _attributes(self, operation: str, rid: UUID) -> dict[str, Any]:
        return {"db.system": self._db, "db.operation.name": operation, "agentckpt.run_id": str(rid)}

    async def _resume_run(self, rid: UUID) -> tuple[RunInfo, Checkpoint | None]:
        rows = await self.backend.read(queries.RESUME_RUN, {"run_id": rid})
        if not rows:
            raise RunNotFoundError(f"no run {rid}")
        rows = await self._runs(await self.open_rows(STEP, rows, run_id=rid))
        run = _run_info({**rows[0], **{name: rows[0][alias] for name, alias in _RUN_ALIASES}})
        self._acknowledged.check(rid, rows[-1]["step"])
        if rows[0]["step"] is None:
            self._remember(rid, EMPTY_HEAD)
            return run, None
        last = rows[-1]
        # The caller owns the rebuilt state; the cached head decodes its own copy from
        # the members' encodings (computed for the checksum) only if a commit follows.
        state, head = hand_over(rebuild(rid, rows, verify=self.verify))
        self._remember(rid, head)
        if self.migrations is not None:
            state, _ = self.migrations.upgrade(state)
        checkpoint = Checkpoint(
            run_id=rid, step=last["step"], state=state, info=_step_info(rid, last)
        )
        return run, checkpoint

    async def latest(self, run_id: RunId) -> Checkpoint | None:
        """The run's newest state, read from the database in one query; None if no step yet."""
        rid = as_run_id(run_id)
        with self.telemetry.timed(
            "agentckpt.latest", "agentckpt.resume.duration", self._attributes("latest", rid)
        ):
            rows = await self.open_rows(
                STEP,
                await self.backend.read(queries.LOAD_CHAIN, {"run_id": rid, "step": None}),
                run_id=rid,
            )
            if not rows:
                await self.get_run(rid)
                return None
            return self._checkpoint(rid, rows)

    async def state_at(self, run_id: RunId, step: int) -> Checkpoint:
        """The run's state at a kept step; :class:`StepNotFoundError` if it is not kept."""
        rid = as_run_id(run_id)
        check_number("step", step)
        rows = await self.open_rows(
            STEP,
            await self.backend.read(queries.LOAD_CHAIN, {"run_id": rid, "step": step}),
            run_id=rid,
        )
        if not rows or rows[-1]["step"] != step:
            await self.get_run(rid)
            raise StepNotFoundError(f"run {rid} has no kept step {step}")
        return self._checkpoint(rid, rows)

    def _checkpoint(self, rid: UUID, rows: list[Row]) -> Checkpoint:
        head = rebuild(rid, rows, verify=self.verify)
        state = head.state
        if self.migrations is not None:
            state, _ = self.migrations.upgrade(state)
        return Checkpoint(
            run_id=rid, step=rows[-1]["step"], state=state, info=_step_info(rid, rows[-1])
        )

    async def steps(self, run_id: RunId) -> list[StepInfo]:
        """The run's kept steps in order, without their states."""
        rid = as_run_id(run_id)
        rows = await self.backend.read(queries.LIST_STEPS, {"run_id": rid})
        if not rows:
            await self.get_run(rid)
        return [_step_info(rid, row) for row in rows]

    async def prune(self, run_id: RunId, *, below: int | None = None) -> int:
        """Delete the steps before the run's newest snapshot; returns how many went.

        ``below`` names another kept snapshot step to prune before (one that is no
        later than the newest): every state from it on can still be rebuilt.
        """
        rid = as_run_id(run_id)
        run = await self.get_run(rid)
        before = await self.steps(rid)
        if below is None:
            if run.snapshot_step is None:
                return 0
            below = run.snapshot_step
        else:
            check_number("below", below)
            kept = {info.step: info.kind for info in before}
            if kept.get(below) != "snapshot" or (
                run.snapshot_step is not None and below > run.snapshot_step
            ):
                raise InvalidValueError(
                    "", f"run {rid}: step {below} is not a kept snapshot at or before the newest"
                )
        await self.backend.write(queries.PRUNE_STEPS, {"run_id": rid, "below": below})
        return sum(1 for info in before if info.step < below)

    async def fork(
        self, run_id: RunId, step: int | None = None, *, new_run_id: RunId | None = None
    ) -> RunInfo:
        """Start a new run from the state of ``run_id`` at ``step`` (default: its head).

        The new run records where it came from (``parent_run_id``, ``parent_step``) and
        starts with one snapshot at the same step number.
        """
        rid = as_run_id(run_id)
        source = await self.get_run(rid)
        checkpoint = await (self.latest(rid) if step is None else self.state_at(rid, step))
        if checkpoint is None:
            raise StepNotFoundError(f"run {rid} has no step to fork from")
        fork = await self.create_run(
            new_run_id,
            agent_id=source.agent_id,
            kind=source.kind,
            config=source.config,
            metadata=source.metadata,
            parent=(rid, checkpoint.step),
        )
        try:
            copy = {"from_run_id": rid, "to_run_id": fork.run_id, "step": checkpoint.step}
            await self.backend.write(queries.COPY_BLOBS, copy)
            await self.backend.write(queries.COPY_HISTORY, copy)
            await self.commit(fork.run_id, checkpoint.state, step=checkpoint.step)
        except BaseException:
            await self.delete_run(fork.run_id)
            raise
        return await self.get_run(fork.run_id)

    # -- blobs -----------------------------------------------------------------------

    @staticmethod
    def prepare_blob(data: bytes) -> tuple[BlobRef, BlobRow]:
        """Compress and address ``data``: the reference for the state, the row to commit.

        Pass the row to :meth:`commit` (``blobs=[row]``) and put ``ref.to_json()`` in
        the state; the blob and the step then become durable together.
        """
        digest = digest_of(data)
        codec, stored = compress(data)
        ref = BlobRef(digest=digest, size=len(data), codec=codec, uri=db_uri(digest))
        return ref, BlobRow(digest=digest, codec=codec, size=len(data), data=stored)

    async def copy_blobs(self, from_run_id: RunId, to_run_id: RunId) -> None:
        """Copy every blob of one run to another (content-addressed: a blob the target
        already has is kept as it is)."""
        await self.backend.write(
            queries.COPY_BLOBS,
            {"from_run_id": as_run_id(from_run_id), "to_run_id": as_run_id(to_run_id)},
        )

    async def put_blob(self, run_id: RunId, data: bytes) -> BlobRef:
        """Store ``data`` as a blob of the run now (its own transaction); idempotent.
        ``data`` over ``Limits.max_bytes`` is an :class:`InvalidValueError`, nothing
        written."""
        rid = as_run_id(run_id)
        if len(data) > self.limits.max_bytes:
            raise InvalidValueError(
                "",
                f"run {rid}: blob of {len(data)} bytes, over the limit of "
                f"{self.limits.max_bytes} bytes for one value (Limits.max_bytes)",
            )
        ref, row = self.prepare_blob(data)
        row = self.sealing.seal_blob(row)
        attributes = {**self._attributes("blob_put", rid), "agentckpt.bytes_written": len(row.data)}
        with self.telemetry.span("agentckpt.blob.put", attributes):
            await self._put_blob(rid, row)
        return ref

    async def _put_blob(self, rid: UUID, row: BlobRow) -> None:
        await self.backend.write(
            queries.INSERT_BLOB,
            {
                "run_id": rid,
                "digest": row.digest,
                "codec": row.codec,
                "size": row.size,
                "data": row.data,
            },
        )

    async def get_blob(self, run_id: RunId, ref: BlobRef | dict[str, Any]) -> bytes:
        """The blob's original bytes, verified against its sha256."""
        rid = as_run_id(run_id)
        blob = ref if isinstance(ref, BlobRef) else BlobRef.from_json(ref)
        with self.telemetry.span("agentckpt.blob.get", self._attributes("blob_get", rid)):
            rows = await self.backend.read(queries.GET_BLOB, {"run_id": rid, "digest": blob.digest})
        if not rows:
            raise NotFoundError(f"run {rid} has no blob {blob.digest} in the database")
        row = (await self.open_rows(BLOB, rows, run_id=rid, column="data"))[0]
        return decompress(row["codec"], bytes(row["data"]), digest=blob.digest, where=f"run {rid}")
