"""Reading LangGraph's own savers' tables, for an import into agentckpt; read-only.

Two sources, each opened from what the user's saver was opened with:

- ``langgraph-postgres``: the tables of ``PostgresSaver`` / ``AsyncPostgresSaver``
  (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``, ``checkpoint_migrations``)
  on the connection string's ``search_path``. A checkpoint is read with ``PostgresSaver``'s
  own ``get_tuple`` (channel values joined from their blobs, pending sends of checkpoints
  before format 4 moved in, as LangGraph reads them).
- ``langgraph-sqlite``: the tables of ``SqliteSaver`` / ``AsyncSqliteSaver`` (``checkpoints``,
  ``writes``) in a file opened read-only. A checkpoint is one typed value there, metadata
  JSON text.

Pending writes are read row by row, with their task path and index, which LangGraph's
``CheckpointTuple.pending_writes`` leaves out. Values are decoded with LangGraph's
serializer (``JsonPlusSerializer`` unless another is given). Nothing is ever written to
the source.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from agentckpt.errors import ConfigurationError, CorruptDataError

__all__ = [
    "SOURCE_KINDS",
    "Source",
    "SourceCheckpoint",
    "SourceKind",
    "SourceWrite",
    "open_source",
]

SourceKind = Literal["langgraph-postgres", "langgraph-sqlite"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("langgraph-postgres", "langgraph-sqlite")

# The columns an import reads; a table without them is not one of LangGraph's savers'.
_POSTGRES_TABLES = {
    "checkpoints": {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id"},
    "checkpoint_blobs": {"thread_id", "checkpoint_ns", "channel", "version", "type", "blob"},
    "checkpoint_writes": {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "blob",
    },
    "checkpoint_migrations": {"v"},
}
_SQLITE_TABLES = {
    "checkpoints": {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "type",
        "checkpoint",
        "metadata",
    },
    "writes": {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        "channel",
        "type",
        "value",
    },
}


@dataclass(frozen=True, slots=True)
class SourceCheckpoint:
    """One checkpoint as LangGraph's saver returns it: decoded, with its parent's id."""

    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_id: str | None


@dataclass(frozen=True, slots=True)
class SourceWrite:
    """One pending write row, decoded."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Any


class Source(Protocol):
    """A LangGraph saver's database, read thread by thread."""

    kind: SourceKind
    where: str

    def thread_ids(self) -> list[str]:
        """Every thread id, in code point order."""
        ...

    def checkpoint_ids(self, thread_id: str) -> dict[str, list[str]]:
        """The thread's checkpoint ids by namespace, each list oldest (smallest) first."""
        ...

    def write_counts(self, thread_id: str) -> dict[tuple[str, str], int]:
        """How many pending writes each (namespace, checkpoint id) of the thread has."""
        ...

    def checkpoint(self, thread_id: str, namespace: str, checkpoint_id: str) -> SourceCheckpoint:
        """One checkpoint, decoded."""
        ...

    def writes(self, thread_id: str, namespace: str, checkpoint_id: str) -> list[SourceWrite]:
        """The checkpoint's pending writes, decoded, in (task path, task id, index) order."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


def open_source(kind: str, location: str, *, serde: SerializerProtocol | None = None) -> Source:
    """Open LangGraph's saver database: a connection string, or a SQLite file path."""
    if kind == "langgraph-postgres":
        return PostgresSource(location, serde=serde)
    if kind == "langgraph-sqlite":
        return SqliteSource(location, serde=serde)
    raise ConfigurationError(f"unknown LangGraph source {kind!r}; use {' or '.join(SOURCE_KINDS)}")


def _one_line(exc: BaseException) -> str:
    """A driver's message on one line (libpq's have a hint on the next)."""
    return " ".join(str(exc).split())


def _by_namespace(rows: Iterator[tuple[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for namespace, checkpoint_id in rows:
        found[namespace].append(checkpoint_id)
    # In Python: the order must be code point order whatever the database's collation.
    return {namespace: sorted(ids) for namespace, ids in sorted(found.items())}


def _decode_write(serde: SerializerProtocol, where: str, row: Sequence[Any]) -> SourceWrite:
    task_id, task_path, idx, channel, type_, value = row
    if type_ is None or value is None:
        raise CorruptDataError(f"{where}: the write {task_id!r}/{idx} has no serialized value")
    return SourceWrite(
        task_id=task_id,
        task_path=task_path,
        idx=int(idx),
        channel=channel,
        value=serde.loads_typed((type_, bytes(value))),
    )


def _missing_columns(found: Mapping[str, set[str]], wanted: Mapping[str, set[str]]) -> list[str]:
    return [
        f"{table}" if table not in found else f"{table}.{column}"
        for table, columns in wanted.items()
        for column in (sorted(columns - found[table]) if table in found else [""])
    ]


class PostgresSource:
    """The tables of LangGraph's ``PostgresSaver`` on a PostgreSQL connection string."""

    kind: SourceKind = "langgraph-postgres"

    def __init__(self, conn_string: str, *, serde: SerializerProtocol | None = None) -> None:
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise ConfigurationError(
                f"reading LangGraph's PostgreSQL saver needs {exc.name}: "
                "pip install langgraph-checkpoint-postgres"
            ) from exc
        self._errors = psycopg.Error
        self.where = "LangGraph's PostgreSQL database"
        try:
            # As PostgresSaver.from_conn_string opens it.
            self._conn = psycopg.Connection.connect(
                conn_string, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
        except psycopg.Error as exc:
            raise ConfigurationError(
                f"cannot connect to LangGraph's PostgreSQL database: {_one_line(exc)}"
            ) from None
        try:
            self.where = self._describe()
            self._check(len(PostgresSaver.MIGRATIONS) - 1)
        except BaseException:
            self._conn.close()
            raise
        self._saver = PostgresSaver(self._conn, serde=serde or JsonPlusSerializer())
        self.serde = self._saver.serde

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except self._errors as exc:
            raise ConfigurationError(
                f"{self.where}: reading LangGraph's tables failed: {_one_line(exc)}"
            ) from None

    def _describe(self) -> str:
        row = self._rows("SELECT current_database() AS db, current_schemas(false) AS path")[0]
        return f"PostgreSQL database {row['db']} (search_path {', '.join(row['path']) or '-'})"

    def _check(self, latest: int) -> None:
        rows = self._rows(
            "SELECT c.relname AS table_name, a.attname AS column_name"
            " FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
            " WHERE c.oid = to_regclass(%s) OR c.oid = to_regclass(%s)"
            " OR c.oid = to_regclass(%s) OR c.oid = to_regclass(%s)",
            list(_POSTGRES_TABLES),
        )
        found: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            found[row["table_name"]].add(row["column_name"])
        missing = _missing_columns(found, _POSTGRES_TABLES)
        if missing:
            raise ConfigurationError(
                f"{self.where} is not a LangGraph PostgresSaver database (missing: "
                f"{', '.join(missing)}); pass the connection string the saver uses (another "
                "schema: ?options=-csearch_path%3Dname)"
            )
        applied = self._rows("SELECT max(v) AS v FROM checkpoint_migrations")[0]["v"]
        if applied is None or applied < latest:
            raise ConfigurationError(
                f"{self.where}: LangGraph's tables are at migration {applied}, the installed "
                f"langgraph-checkpoint-postgres reads migration {latest}; run "
                "PostgresSaver.setup() on them once (the import never changes the source)"
            )
        if applied > latest:
            raise ConfigurationError(
                f"{self.where}: LangGraph's tables are at migration {applied}, newer than the "
                f"installed langgraph-checkpoint-postgres reads ({latest}); upgrade it"
            )

    def thread_ids(self) -> list[str]:
        """Every thread id, in code point order."""
        rows = self._rows("SELECT DISTINCT thread_id FROM checkpoints")
        return sorted(row["thread_id"] for row in rows)

    def checkpoint_ids(self, thread_id: str) -> dict[str, list[str]]:
        """The thread's checkpoint ids by namespace, oldest first."""
        rows = self._rows(
            "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = %s",
            [thread_id],
        )
        return _by_namespace((row["checkpoint_ns"], row["checkpoint_id"]) for row in rows)

    def write_counts(self, thread_id: str) -> dict[tuple[str, str], int]:
        """How many pending writes each (namespace, checkpoint id) of the thread has."""
        rows = self._rows(
            "SELECT checkpoint_ns, checkpoint_id, count(*) AS n FROM checkpoint_writes"
            " WHERE thread_id = %s GROUP BY checkpoint_ns, checkpoint_id",
            [thread_id],
        )
        return {(row["checkpoint_ns"], row["checkpoint_id"]): int(row["n"]) for row in rows}

    def checkpoint(self, thread_id: str, namespace: str, checkpoint_id: str) -> SourceCheckpoint:
        """One checkpoint, read by LangGraph's own ``PostgresSaver.get_tuple``."""
        config = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint_id,
            }
        }
        try:
            found = self._saver.get_tuple(config)  # type: ignore[arg-type]
        except self._errors as exc:
            raise ConfigurationError(
                f"{self.where}: reading LangGraph's tables failed: {_one_line(exc)}"
            ) from None
        if found is None:
            raise CorruptDataError(
                f"{self.where}: checkpoint {checkpoint_id!r} of thread {thread_id!r} "
                "disappeared during the import (is a LangGraph process still pruning it?)"
            )
        parent = found.parent_config
        return SourceCheckpoint(
            checkpoint=dict(found.checkpoint),
            metadata=dict(found.metadata),
            parent_id=None if parent is None else parent["configurable"]["checkpoint_id"],
        )

    def writes(self, thread_id: str, namespace: str, checkpoint_id: str) -> list[SourceWrite]:
        """The checkpoint's pending writes, decoded."""
        rows = self._rows(
            "SELECT task_id, task_path, idx, channel, type, blob FROM checkpoint_writes"
            " WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            [thread_id, namespace, checkpoint_id],
        )
        where = f"{self.where}: thread {thread_id!r} checkpoint {checkpoint_id!r}"
        writes = [_decode_write(self.serde, where, tuple(row.values())) for row in rows]
        writes.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
        return writes

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class SqliteSource:
    """The tables of LangGraph's ``SqliteSaver`` in a SQLite file, opened read-only."""

    kind: SourceKind = "langgraph-sqlite"

    def __init__(self, path: str, *, serde: SerializerProtocol | None = None) -> None:
        file = Path(path).expanduser()
        self.where = f"SQLite file {file}"
        if path == ":memory:" or not file.is_file():
            raise ConfigurationError(
                f"no SQLite database at {file.resolve()}; pass the path SqliteSaver was opened with"
            )
        self.serde: SerializerProtocol = serde or JsonPlusSerializer()
        try:
            self._conn = sqlite3.connect(file.resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open {self.where}: {_one_line(exc)}") from None
        try:
            self._has_path = self._check()
        except BaseException:
            self._conn.close()
            raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise ConfigurationError(
                f"{self.where}: reading LangGraph's tables failed: {_one_line(exc)}"
            ) from None

    def _check(self) -> bool:
        found: dict[str, set[str]] = {}
        for table in _SQLITE_TABLES:
            try:
                columns = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            except sqlite3.DatabaseError as exc:
                raise ConfigurationError(
                    f"{self.where} is not a SQLite database ({_one_line(exc)})"
                ) from None
            if columns:
                found[table] = columns
        missing = _missing_columns(found, _SQLITE_TABLES)
        if missing:
            raise ConfigurationError(
                f"{self.where} is not a LangGraph SqliteSaver database (missing: "
                f"{', '.join(missing)})"
            )
        # Files from before LangGraph added task_path: every write's path is "".
        return "task_path" in found["writes"]

    def thread_ids(self) -> list[str]:
        """Every thread id, in code point order."""
        return sorted(
            str(row[0]) for row in self._rows("SELECT DISTINCT thread_id FROM checkpoints")
        )

    def checkpoint_ids(self, thread_id: str) -> dict[str, list[str]]:
        """The thread's checkpoint ids by namespace, oldest first."""
        rows = self._rows(
            "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = ?", [thread_id]
        )
        return _by_namespace((str(ns), str(cid)) for ns, cid in rows)

    def write_counts(self, thread_id: str) -> dict[tuple[str, str], int]:
        """How many pending writes each (namespace, checkpoint id) of the thread has."""
        rows = self._rows(
            "SELECT checkpoint_ns, checkpoint_id, count(*) FROM writes"
            " WHERE thread_id = ? GROUP BY checkpoint_ns, checkpoint_id",
            [thread_id],
        )
        return {(str(ns), str(cid)): int(n) for ns, cid, n in rows}

    def checkpoint(self, thread_id: str, namespace: str, checkpoint_id: str) -> SourceCheckpoint:
        """One checkpoint, decoded as ``SqliteSaver`` decodes it."""
        rows = self._rows(
            "SELECT parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints"
            " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            [thread_id, namespace, checkpoint_id],
        )
        where = f"{self.where}: thread {thread_id!r} checkpoint {checkpoint_id!r}"
        if not rows:
            raise CorruptDataError(f"{where} disappeared during the import")
        parent_id, type_, data, metadata = rows[0]
        if type_ is None or data is None:
            raise CorruptDataError(f"{where} has no serialized checkpoint")
        try:
            decoded_metadata = json.loads(metadata) if metadata is not None else {}
        except ValueError as exc:
            raise CorruptDataError(
                f"{where}: its metadata is not JSON ({_one_line(exc)})"
            ) from None
        return SourceCheckpoint(
            checkpoint=dict(self.serde.loads_typed((type_, bytes(data)))),
            metadata=dict(decoded_metadata),
            parent_id=parent_id or None,
        )

    def writes(self, thread_id: str, namespace: str, checkpoint_id: str) -> list[SourceWrite]:
        """The checkpoint's pending writes, decoded."""
        path = "task_path" if self._has_path else "''"
        rows = self._rows(
            f"SELECT task_id, {path}, idx, channel, type, value FROM writes"
            " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            [thread_id, namespace, checkpoint_id],
        )
        where = f"{self.where}: thread {thread_id!r} checkpoint {checkpoint_id!r}"
        writes = [_decode_write(self.serde, where, row) for row in rows]
        writes.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
        return writes

    def close(self) -> None:
        """Close the file."""
        self._conn.close()
