# GENERATED from postgres_async.py by scripts/unasync.py; do not edit.
"""PostgreSQL backend on psycopg 3 and psycopg_pool (async source of the sync twin).

``postgres_sync.py`` is generated from this file by ``scripts/unasync.py``; edit this one.

Connections are ``autocommit=True`` and this class opens every transaction itself: on a
non-autocommit connection one earlier SELECT would turn each later ``transaction()``
block into a mere savepoint that nothing ever commits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from agentckpt import _compat
from agentckpt._backends.base import Params
from agentckpt._backends.options import PostgresOptions
from agentckpt._backends.pg_arrays import (
    PgArray,
    bool_array,
    bytea_array,
    int8_array,
    register_arrays,
    text_array,
    uuid_array,
)
from agentckpt._backends.pg_errors import (
    Retry,
    connect_failure_is_final,
    connect_reason,
    retry_kind,
    translate,
)
from agentckpt._backends.sql import load_migrations, load_queries
from agentckpt._core.writes import CommitOutcome, Committed, Refused, Row, StepWrite
from agentckpt.errors import ConfigurationError, MigrationError, UnavailableError

T = TypeVar("T")
Conn = psycopg.Connection[Row]


def batch_params(writes: Sequence[StepWrite]) -> dict[str, PgArray]:
    """The parameters of ``commit_steps`` for a batch of writes, each of another run."""
    blobs = [(w.run_id, b) for w in writes for b in w.blobs]
    history = [(w.run_id, h) for w in writes for h in w.history]
    return {
        "run_ids": uuid_array([w.run_id for w in writes]),
        "steps": int8_array([w.step for w in writes]),
        "parent_steps": int8_array([w.parent_step for w in writes]),
        "kinds": text_array([w.kind for w in writes]),
        "is_opens": bool_array([w.is_open for w in writes]),
        "codecs": text_array([w.codec for w in writes]),
        "payloads": bytea_array([w.payload for w in writes]),
        "state_versions": int8_array([w.state_version for w in writes]),
        "write_versions": int8_array([w.write_version for w in writes]),
        "raw_bytes": int8_array([w.raw_bytes for w in writes]),
        "state_bytes": int8_array([w.state_bytes for w in writes]),
        "checksums": bytea_array([w.checksum for w in writes]),
        "expected_steps": int8_array([w.expected_step for w in writes]),
        "expected_versions": int8_array([w.expected_version for w in writes]),
        "epochs": int8_array([w.epoch for w in writes]),
        "snapshot_steps": int8_array([w.snapshot_step for w in writes]),
        "chain_bytes": int8_array([w.chain_bytes for w in writes]),
        "prune_belows": int8_array([w.prune_below for w in writes]),
        "seal_steps": int8_array([w.seal_step for w in writes]),
        "metadatas": text_array([w.metadata for w in writes]),
        "blob_run_ids": uuid_array([run_id for run_id, _ in blobs]),
        "blob_digests": text_array([b.digest for _, b in blobs]),
        "blob_codecs": text_array([b.codec for _, b in blobs]),
        "blob_sizes": int8_array([b.size for _, b in blobs]),
        "blob_datas": bytea_array([b.data for _, b in blobs]),
        "history_run_ids": uuid_array([run_id for run_id, _ in history]),
        "history_seqs": int8_array([h.seq for _, h in history]),
        "history_counts": int8_array([h.item_count for _, h in history]),
        "history_codecs": text_array([h.codec for _, h in history]),
        "history_payloads": bytea_array([h.payload for _, h in history]),
        "history_raw_bytes": int8_array([h.raw_bytes for _, h in history]),
    }


def _configure(conn: Conn) -> None:
    # Timestamps come back in UTC, as on SQLite, whatever the server's default or PGTZ
    # says (a -c timezone=UTC startup option loses to PGTZ).
    conn.execute("SET TIME ZONE 'UTC'")
    register_arrays(conn)


def _first_connect(conninfo: str, bound: float) -> None:
    """Connect once, directly, before the pool opens, so a URL that cannot work fails
    within ``bound`` seconds with libpq's (or the server's) own reason, instead of the pool
    retrying for its whole wait and logging a warning for every attempt.

    A server that is unreachable or not yet accepting connections is tried again until the
    bound; a bad URL value, an unknown role or database, a refused password fail at once.
    """
    deadline = time.monotonic() + bound
    pause = 0.05
    while True:
        # libpq rounds connect_timeout up to 2 s; it bounds each attempt (a silent host).
        per_attempt = max(2, math.ceil(deadline - time.monotonic()))
        try:
            conn = psycopg.Connection.connect(conninfo, connect_timeout=per_attempt)
        except psycopg.Error as exc:
            reason = connect_reason(exc)
            if connect_failure_is_final(exc):
                raise ConfigurationError(f"cannot connect to PostgreSQL: {reason}") from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise UnavailableError(
                    f"could not connect to PostgreSQL within {bound:g} s: {reason}"
                ) from None
            _compat.sleep(min(pause, remaining))
            pause = min(pause * 2, 1.0)
            continue
        conn.close()
        return


class PostgresBackend:
    """A pool of autocommit connections to one PostgreSQL schema.

    Connection failures are retried ``attempts`` times with backoff; this is safe for
    commits because the store's commits are idempotent. Serialization failures and
    deadlocks (SQLSTATE 40001, 40P01) are retried the same way.
    """

    dialect = "postgresql"

    def __init__(
        self,
        pool: ConnectionPool[Conn],
        *,
        schema: str,
        attempts: int = 4,
        backoff: float = 0.05,
        wait: float = 30.0,
    ) -> None:
        self._pool = pool
        self.schema = schema
        self._attempts = attempts
        self._backoff = backoff
        self._wait = wait
        self._queries = load_queries("postgres")
        # Each batch in flight holds a connection: at most one per pooled connection.
        self.max_batches = pool.max_size

    @classmethod
    def connect(
        cls, conninfo: str, options: PostgresOptions = PostgresOptions()
    ) -> PostgresBackend:
        """Open a pool; ``options.wait`` bounds the first connection and every checkout.

        ``conninfo`` is passed to libpq as it is; a URL libpq cannot parse is a
        :class:`ConfigurationError` at once. Its own ``options`` parameter is kept:
        agentckpt appends its ``search_path`` and ``lock_timeout`` to it.
        """
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ConfigurationError(f"libpq cannot parse the store URL: {exc}") from None
        own = f"-c search_path={options.schema} -c lock_timeout=10s"
        user_options = params.get("options")
        _first_connect(conninfo, options.connect_wait)
        pool: ConnectionPool[Conn] = ConnectionPool(
            conninfo,
            min_size=options.pool_min,
            max_size=options.pool_max,
            timeout=options.wait,
            open=False,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "options": f"{user_options} {own}" if user_options else own,
                "prepare_threshold": options.prepare_threshold,
            },
            name=f"agentckpt-{options.schema}",
            configure=_configure,
        )
        try:
            pool.open(wait=True, timeout=options.wait)
        except PoolTimeout as exc:
            pool.close()
            raise UnavailableError(
                f"could not connect to PostgreSQL within {options.wait:g} s; check the URL "
                "and that the server is up"
            ) from exc
        return cls(pool, schema=options.schema, wait=options.wait)

    def _run(self, fn: Callable[[Conn], T], *, writing: bool) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._pool.connection(timeout=self._wait) as conn:
                    return fn(conn)
            except PoolTimeout as exc:
                raise UnavailableError(
                    f"no PostgreSQL connection free or reachable within {self._wait:g} s"
                ) from exc
            except psycopg.Error as exc:
                if retry_kind(exc) is Retry.NO or attempt >= self._attempts:
                    raise translate(exc, writing=writing) from exc
                _compat.sleep(self._backoff * 2 ** (attempt - 1))

    def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own transaction under an advisory lock."""
        q = self._queries

        def apply(conn: Conn) -> list[int]:
            applied: list[int] = []
            with conn.transaction():
                conn.execute(q["migration_lock"])
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                conn.execute(q["migrations_table"])
            for migration in load_migrations("postgres"):
                with conn.transaction():
                    # The lock serializes concurrent migrators; the check under it makes a
                    # migration that another process just applied a no-op here.
                    conn.execute(q["migration_lock"])
                    cur = conn.execute(q["applied_migrations"])
                    done = {row["version"] for row in cur.fetchall()}
                    if migration.version in done:
                        continue
                    conn.execute(migration.sql.encode())
                    conn.execute(
                        q["record_migration"],
                        {"version": migration.version, "name": migration.name},
                    )
                    applied.append(migration.version)
            return applied

        try:
            return self._run(apply, writing=True)
        except MigrationError:
            raise
        except Exception as exc:
            if isinstance(exc, UnavailableError):
                raise
            raise MigrationError(f"migration failed: {exc}") from exc

    def applied_migrations(self) -> list[int]:
        """The recorded migration versions; empty when the schema was never migrated."""

        def read(conn: Conn) -> list[int]:
            cur = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
            row = cur.fetchone()
            if not row or not row["present"]:
                return []
            cur = conn.execute(self._queries["applied_migrations"])
            return [r["version"] for r in cur.fetchall()]

        return self._run(read, writing=False)

    def read(self, name: str, params: Params) -> list[Row]:
        """Run a named read-only statement."""
        sql = self._queries[name]

        def read(conn: Conn) -> list[Row]:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

        return self._run(read, writing=False)

    def write(self, name: str, params: Params) -> list[Row]:
        """Run a named single-statement write; autocommit makes it its own transaction."""
        sql = self._queries[name]

        def write(conn: Conn) -> list[Row]:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

        return self._run(write, writing=True)

    def write_many(self, name: str, params: Sequence[Params]) -> None:
        """Run a named write per parameter set in one transaction (pipelined)."""
        self.write_all([(name, params)])

    def write_all(self, writes: Sequence[tuple[str, Sequence[Params]]]) -> None:
        """Run named writes, each per parameter set, in order, all in one transaction."""
        batches = [(self._queries[name], params) for name, params in writes]

        def write(conn: Conn) -> None:
            with conn.transaction(), conn.cursor() as cur:
                for sql, params in batches:
                    if params:
                        cur.executemany(sql, params)

        self._run(write, writing=True)

    def commit_batch(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        """Commit steps of different runs in one statement and transaction: guards, blobs,
        history, prunes, seals, steps. A write whose guard fails writes nothing."""
        params = batch_params(writes)
        q = self._queries

        def commit(conn: Conn) -> list[CommitOutcome]:
            cur = conn.execute(q["commit_steps"], params)
            landed = {row["run_id"]: row for row in cur.fetchall()}
            outcomes: list[CommitOutcome] = []
            for write in writes:
                row = landed.get(write.run_id)
                if row is not None:
                    outcomes.append(Committed(row["created_at"], row["updated_at"]))
                    continue
                probe = {"run_id": write.run_id, "step": write.step}
                cur = conn.execute(q["commit_probe"], probe)
                outcomes.append(Refused(cur.fetchone()))
            return outcomes

        return self._run(commit, writing=True)

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()
