"""SQLite backend: the embedded, zero-setup default (standard library ``sqlite3``)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import orjson

from agentckpt._backends.base import Params
from agentckpt._backends.options import SqliteOptions
from agentckpt._backends.sql import Migration, load_migrations, load_queries, split_statements
from agentckpt._core.writes import CommitOutcome, Committed, Payload, Refused, Row, StepWrite
from agentckpt.errors import (
    InvalidValueError,
    MigrationError,
    RunNotFoundError,
    StorageFullError,
    StoreError,
    UnavailableError,
)

T = TypeVar("T")

_STATEMENT_CACHE = 256
_UUID_COLUMNS = frozenset({"run_id", "parent_run_id"})
_BOOL_COLUMNS = frozenset({"is_open", "head_open"})
# The bound time's datetime, kept in a write's parameters beside it (sqlite3 binds only
# the names a statement has, and no statement has this one).
_MOMENT = "now moment"
# What SQLite says when a step's row exists already (its primary key).
_STEP_EXISTS = "UNIQUE constraint failed: steps.run_id, steps.step"


class _SealedStep(Exception):
    """A write of a batch found its step sealed after its guard moved the head: the batch
    is rolled back and runs again with a savepoint a write."""


def _param(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, bool):
        return int(value)
    return value


def _params(params: Params) -> dict[str, Any]:
    return {key: _param(value) for key, value in params.items()}


def _bind(write: StepWrite) -> dict[str, Any]:
    """The named parameters of a write's statements: the write's own, with the run id as
    the text SQLite stores and ``is_open`` as the int it stores (sqlite3 sends a bool
    through its adapter lookup first, which costs more than the conversion)."""
    params = write.params()
    params["run_id"] = str(write.run_id)
    params["is_open"] = 1 if write.is_open else 0
    return params


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


class _Clock:
    """The clock's time as ``strftime('%Y-%m-%dT%H:%M:%f', 'now')`` writes it (UTC, whole
    milliseconds, truncated as SQLite truncates), and that text's datetime.

    A commit binds it instead of calling ``strftime`` in its statements: SQLite's clock is
    this process's, the text is the same, and the step's timestamps need no parse. The
    text and datetime of the current second are kept: formatting a datetime costs more
    than the rest of this together, and commits come many a second.
    """

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str, datetime] = (-1, "", _EPOCH)

    def now(self) -> tuple[str, datetime]:
        """The time's text and datetime."""
        second, milli = divmod(time.time_ns() // 1_000_000, 1000)
        # One tuple, read and replaced whole: threads racing here recompute, never mix.
        known = self._second
        if known[0] != second:
            moment = _EPOCH + timedelta(seconds=second)
            known = self._second = (second, moment.isoformat()[:19], moment)
        return f"{known[1]}.{milli:03d}", known[2] + milli * _MILLISECOND


_now = _Clock().now


def _timestamp(value: str) -> datetime:
    # SQLite's text has no zone and is UTC: one parse with the zone appended costs a
    # third of a parse and a replace. Text that has a zone already keeps the old reading.
    try:
        return datetime.fromisoformat(value + "+00:00")
    except ValueError:
        return datetime.fromisoformat(value).replace(tzinfo=UTC)


def _column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _UUID_COLUMNS:
        return UUID(value)
    if name in _BOOL_COLUMNS:
        return bool(value)
    if name.endswith("_at") and isinstance(value, str):
        return _timestamp(value)
    return value


class LockHeld(UnavailableError):
    """Another connection holds the file's write lock and the call was asked not to wait
    (:meth:`SqliteBackend.at_once`); nothing was written."""


def _is_busy(exc: BaseException | None) -> bool:
    # The primary result code (the low byte of an extended one such as BUSY_RECOVERY).
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _translate(exc: sqlite3.Error) -> Exception:
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == sqlite3.SQLITE_FULL or "disk is full" in text:
        return StorageFullError(f"SQLite: {text}; free disk space and retry")
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in text:
        return UnavailableError(f"SQLite: {text}; another process held the write lock too long")
    if "FOREIGN KEY constraint failed" in text:
        # Every foreign key of the schema references runs (run_id).
        return RunNotFoundError(f"SQLite: {text}: the run does not exist")
    if "no such table" in text:
        return MigrationError(f"SQLite: {text}; run `agentckpt migrate` or Store.migrate()")
    if isinstance(exc, sqlite3.DataError) or code == sqlite3.SQLITE_TOOBIG:
        return InvalidValueError("", f"SQLite refused the value: {text}")
    return StoreError(f"SQLite: {text}")


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, waiting for other connections that switch the same new file.

    The switch needs an exclusive lock, and SQLite fails it at once with "database is
    locked" (no busy handler: waiting could deadlock) when another connection holds a
    shared lock meanwhile, as when several processes open a new file at the same time.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


class SqliteBackend:
    """One SQLite database file, shared safely by the threads of one process.

    Several processes may use the same file: writers take the lock with
    ``BEGIN IMMEDIATE`` and wait up to ``busy_timeout`` for each other.
    """

    dialect = "sqlite"
    # One connection, so one writer: one batch in flight at a time.
    max_batches = 1

    def __init__(self, path: str, options: SqliteOptions = SqliteOptions()) -> None:
        self.path = path
        self.tenant = options.tenant
        # Read by the async backend (sqlite_worker): how long a call may hold its loop.
        self.inline_limit = options.inline_limit
        busy_timeout = options.wait
        self._busy_ms = int(busy_timeout * 1000)
        # Whether the connection waits for another connection's write lock (busy_timeout)
        # or fails at once (at_once); only ever changed under _lock.
        self._waits = True
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: no implicit BEGIN; this class owns every transaction.
            # cached_statements: room for every named statement and the transaction
            # verbs (about 130; the default 128 would let a process that runs them all
            # evict and re-prepare the commit's statements).
            self._conn = sqlite3.connect(
                path,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout,
                cached_statements=_STATEMENT_CACHE,
            )
            # WAL: readers never block the writer and a crash never corrupts the file.
            _enable_wal(self._conn, busy_timeout)
            # FULL: in WAL mode, an acknowledged commit survives power loss (NORMAL may not).
            self._conn.execute("PRAGMA synchronous=FULL")
            # Wait for another process's write lock instead of failing at once.
            self._conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # The tenant every named query filters on and every insert writes: SQLite has
            # no session setting, so the connection answers agentckpt_tenant() itself.
            tenant = options.tenant
            self._conn.create_function("agentckpt_tenant", 0, lambda: tenant, deterministic=True)
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        self._lock = threading.RLock()
        self._queries = load_queries("sqlite")
        # Split once: splitting a block's text costs more than running a small statement.
        self._blocks = {name: tuple(split_statements(sql)) for name, sql in self._queries.items()}

    # -- plumbing --------------------------------------------------------------------

    def _locked(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return fn(self._conn)
            except sqlite3.Error as exc:
                raise _translate(exc) from exc

    def at_once(self, fn: Callable[[], T]) -> T:
        """``fn()`` (a call of this backend's) with the lock wait off: where it would wait
        for another connection's write lock, :class:`LockHeld` at once instead.

        Every transaction here takes the write lock with its first statement (``BEGIN
        IMMEDIATE``) and any error rolls it back, so a call that raised ``LockHeld`` has
        written nothing and may run again with :meth:`waiting`.
        """
        with self._lock:
            if self._waits:
                self._conn.execute("PRAGMA busy_timeout=0")
                self._waits = False
            try:
                return fn()
            except UnavailableError as exc:
                if _is_busy(exc.__cause__):
                    raise LockHeld(str(exc)) from exc
                raise

    def waiting(self, fn: Callable[[], T]) -> T:
        """``fn()`` with the lock wait on (up to ``wait`` seconds), as every call of a
        backend that never ran :meth:`at_once` has it."""
        with self._lock:
            if not self._waits:
                self._conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
                self._waits = True
            return fn()

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run(conn: sqlite3.Connection) -> T:
            # IMMEDIATE takes the write lock up front, so the transaction cannot fail
            # half-way with SQLITE_BUSY when it upgrades from reading to writing.
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        return self._locked(run)

    @staticmethod
    def _rows(cursor: sqlite3.Cursor) -> list[Row]:
        if cursor.description is None:
            return []
        names = [d[0] for d in cursor.description]
        return [
            {name: _column(name, value) for name, value in zip(names, row, strict=True)}
            for row in cursor.fetchall()
        ]

    def _run_block(self, conn: sqlite3.Connection, name: str, params: Params) -> list[Row]:
        rows: list[Row] = []
        bound = _params(params)
        for statement in self._blocks[name]:
            cursor = conn.execute(statement, bound)
            rows = self._rows(cursor)
        return rows

    # -- Backend interface ---------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own ``BEGIN IMMEDIATE`` transaction."""
        applied: list[int] = []

        def step(conn: sqlite3.Connection, version: int, name: str, sql: str) -> bool:
            done = {r[0] for r in conn.execute(self._queries["applied_migrations"])}
            if version in done:
                return False
            for statement in split_statements(sql):
                conn.execute(statement)
            conn.execute(self._queries["record_migration"], {"version": version, "name": name})
            return True

        self._locked(lambda conn: conn.execute(self._queries["migrations_table"]))
        for migration in load_migrations("sqlite"):

            def apply(conn: sqlite3.Connection, m: Migration = migration) -> bool:
                return step(conn, m.version, m.name, m.sql)

            if self._transaction(apply):
                applied.append(migration.version)
        return applied

    def applied_migrations(self) -> list[int]:
        """The recorded migration versions; empty for a fresh file."""

        def read(conn: sqlite3.Connection) -> list[int]:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
            ).fetchone()
            if not exists:
                return []
            return [r[0] for r in conn.execute(self._queries["applied_migrations"])]

        return self._locked(read)

    def read(self, name: str, params: Params) -> list[Row]:
        """Run a named read-only query."""
        return self._locked(lambda conn: self._run_block(conn, name, params))

    def write(self, name: str, params: Params) -> list[Row]:
        """Run a named write block in one transaction."""
        return self._transaction(lambda conn: self._run_block(conn, name, params))

    def write_many(self, name: str, params: Sequence[Params]) -> None:
        """Run a named single-statement write per parameter set, in one transaction."""
        self.write_all([(name, params)])

    def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None:
        """Run named single-statement writes, each per parameter set, in order, all in
        one transaction."""
        batches = [(self._queries[name], [_params(p) for p in params]) for name, params in writes]

        def run(conn: sqlite3.Connection) -> None:
            for statement, bound in batches:
                conn.executemany(statement, bound)

        self._transaction(run)

    def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Commit steps of different runs in one transaction, so one fsync.

        A write whose guard fails has written nothing: it is reported refused and the
        others commit. The one refusal that comes after a write's first statements (its
        step found sealed by the upsert, which the guard should have stopped) rolls the
        batch back, and the batch runs again with each write under a savepoint, so that
        write alone is undone. A lone write's transaction is the unit, rolled back when
        refused. An error rolls back the whole batch.
        """
        # Packed before the transaction: on the async backend's worker thread, beside the
        # event loop (zstd releases the GIL), and not while holding the write lock.
        Payload.pack_all([write.stored for write in writes])
        if len(writes) == 1:
            return [self._locked(lambda conn: self._commit_alone(conn, writes[0]))]
        try:
            return self._transaction(lambda conn: self._commit_each(conn, writes, self._commit_one))
        except _SealedStep:
            return self._transaction(
                lambda conn: self._commit_each(conn, writes, self._commit_saved)
            )

    def _commit_each(
        self,
        conn: sqlite3.Connection,
        writes: Sequence[StepWrite],
        commit: Callable[[sqlite3.Connection, StepWrite], CommitOutcome],
    ) -> list[CommitOutcome]:
        """The writes of a batch in order; a run's later steps (each guarded by the one
        before: the overlapped run loop's chains) are refused unsent once one of them
        is: a refused step leaves a head its next one's guard might match by step and
        version alone."""
        outcomes: list[CommitOutcome] = []
        refused: set[UUID] = set()
        for write in writes:
            if write.run_id in refused:
                outcome: CommitOutcome = Refused(self._probe(conn.cursor(), _bind(write)))
            else:
                outcome = commit(conn, write)
            if isinstance(outcome, Refused):
                refused.add(write.run_id)
            outcomes.append(outcome)
        return outcomes

    def _commit_alone(self, conn: sqlite3.Connection, write: StepWrite) -> CommitOutcome:
        """One write in its own transaction, without a savepoint.

        A refused guard has changed nothing, so the probe reads the head in the same
        transaction before it rolls back, as a batch's probe does after its savepoint's
        rollback. A step found sealed by the upsert (which the guard should have stopped)
        comes after the guard's write: the transaction rolls back first and the probe
        then reads the head as committed.
        """
        params = _bind(write)
        cursor = conn.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            if not self._guard(cursor, params):
                probe = self._probe(cursor, params)
                cursor.execute("ROLLBACK")
                return Refused(probe)
            stamps = self._write(cursor, write, params)
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        if stamps is None:
            cursor.execute("ROLLBACK")
            return Refused(self._probe(cursor, params))
        cursor.execute("COMMIT")
        return stamps

    def _commit_one(self, conn: sqlite3.Connection, write: StepWrite) -> CommitOutcome:
        """One write of a batch of several, without a savepoint: its guard is its first
        statement, so a refused guard has changed nothing; a step found sealed after it
        raises :class:`_SealedStep`, which rolls the batch back.

        Each statement lets the GIL go and takes it back, which on a busy event loop can
        wait up to the switch interval: a savepoint and its release are two a write.
        """
        params = _bind(write)
        cursor = conn.cursor()
        if not self._guard(cursor, params):
            return Refused(self._probe(cursor, params))
        stamps = self._write(cursor, write, params)
        if stamps is None:
            raise _SealedStep
        return stamps

    def _commit_saved(self, conn: sqlite3.Connection, write: StepWrite) -> CommitOutcome:
        """One write of a batch of several, under a savepoint undone alone when refused."""
        params = _bind(write)
        cursor = conn.cursor()
        cursor.execute("SAVEPOINT step_write")
        stamps = self._write(cursor, write, params) if self._guard(cursor, params) else None
        if stamps is None:
            cursor.execute("ROLLBACK TO step_write")
            cursor.execute("RELEASE step_write")
            return Refused(self._probe(cursor, params))
        cursor.execute("RELEASE step_write")
        return stamps

    def _guard(self, cursor: sqlite3.Cursor, params: dict[str, Any]) -> bool:
        """Move the run's head if it is still the one the writer read (and epoch current).

        Inside the transaction, so its time (``:now``, the write's timestamps too) is read
        after any wait for the write lock, as ``strftime('now')`` in the statement would be.
        It binds ``:tenant`` too, for the write's statements after it.
        """
        params["now"], params[_MOMENT] = _now()
        params["tenant"] = self.tenant
        return cursor.execute(self._queries["commit_guard"], params).rowcount == 1

    def _write(
        self, cursor: sqlite3.Cursor, write: StepWrite, params: dict[str, Any]
    ) -> Committed | None:
        """Metadata, blobs, history, prune, seal and the step row of a guarded write.

        None when the step is found sealed: the caller undoes what this wrote.
        """
        q = self._queries
        run_id = params["run_id"]
        if write.metadata is not None:
            self._merge_metadata(cursor, run_id, write.metadata)
        if write.blobs:
            cursor.executemany(
                q["insert_blob"],
                [
                    {
                        "run_id": run_id,
                        "digest": b.digest,
                        "codec": b.codec,
                        "size": b.size,
                        "data": b.data,
                    }
                    for b in write.blobs
                ],
            )
        if write.history:
            cursor.executemany(
                q["insert_history"],
                [
                    {
                        "run_id": run_id,
                        "seq": h.seq,
                        "step": write.step,
                        "item_count": h.item_count,
                        "codec": h.codec,
                        "payload": h.payload,
                        "raw_bytes": h.raw_bytes,
                        "tenant": self.tenant,
                    }
                    for h in write.history
                ],
            )
        if write.prune_below is not None:
            cursor.execute(q["prune_steps"], {"run_id": run_id, "below": write.prune_below})
        if write.seal_step is not None:
            cursor.execute(q["seal_step"], params)
        moment = params[_MOMENT]
        if write.step != write.expected_step:
            # A step after the head: new, unless a row was left past the head (then its
            # primary key fails and the upsert decides). A rewrite of the open head goes
            # to the upsert at once.
            try:
                cursor.execute(q["insert_step"], params)
            except sqlite3.IntegrityError as exc:
                # Only the step's own primary key: the guard matched the run's row, and
                # the values are the store's own.
                if _STEP_EXISTS not in str(exc):
                    raise
            else:
                return Committed(moment, moment)
        row = cursor.execute(q["upsert_step"], params).fetchone()
        if row is None:
            # The step exists and is sealed; the guard should have stopped this.
            return None
        # The row's own timestamps: the bound time, unless a rewritten step kept its own
        # created_at.
        now = params["now"]
        created = moment if row[0] == now else _timestamp(row[0])
        return Committed(created, moment if row[1] == now else _timestamp(row[1]))

    def _probe(self, cursor: sqlite3.Cursor, params: dict[str, Any]) -> Row | None:
        """The run's head and the step as stored now; None when the run does not exist."""
        probe = self._rows(cursor.execute(self._queries["commit_probe"], params))
        return probe[0] if probe else None

    def _merge_metadata(self, cursor: sqlite3.Cursor, run_id: str, patch: str) -> None:
        # Top-level keys replace, as jsonb || does on PostgreSQL; json_patch would recurse.
        # The tenant bound, not agentckpt_tenant(): no call into Python (and the GIL) from
        # inside the statements, as in the guard.
        key = {"run_id": run_id, "tenant": self.tenant}
        current = cursor.execute(self._queries["get_metadata"], key).fetchone()
        merged = orjson.loads(current[0]) if current else {}
        merged.update(orjson.loads(patch))
        cursor.execute(
            self._queries["set_metadata"], {**key, "metadata": orjson.dumps(merged).decode()}
        )

    def close(self) -> None:
        """Close the connection; the file stays consistent whatever happens after."""
        with self._lock:
            self._conn.close()
