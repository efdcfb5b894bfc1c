"""PostgreSQL backend on psycopg 3 and psycopg_pool (async source of the sync twin).

``postgres_sync.py`` is generated from this file by ``scripts/unasync.py``; edit this one.

Connections are ``autocommit=True`` and this class opens every transaction itself: on a
non-autocommit connection one earlier SELECT would turn each later ``transaction()``
block into a mere savepoint that nothing ever commits.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..errors import ConfigurationError, MigrationError, UnavailableError
from .base import (
    BlobRow,
    CommitOutcome,
    Committed,
    HistoryRow,
    Params,
    Refused,
    Row,
    StepWrite,
)
from .pg_errors import Retry, retry_kind, translate
from .queries import load_migrations, load_queries

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Row]

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _blob_arrays(blobs: tuple[BlobRow, ...]) -> dict[str, list[Any]]:
    return {
        "blob_digests": [b.digest for b in blobs],
        "blob_codecs": [b.codec for b in blobs],
        "blob_sizes": [b.size for b in blobs],
        "blob_datas": [b.data for b in blobs],
    }


def _history_arrays(history: tuple[HistoryRow, ...]) -> dict[str, list[Any]]:
    return {
        "history_seqs": [h.seq for h in history],
        "history_counts": [h.item_count for h in history],
        "history_codecs": [h.codec for h in history],
        "history_payloads": [h.payload for h in history],
        "history_raw_bytes": [h.raw_bytes for h in history],
    }


async def _utc_session(conn: Conn) -> None:
    # Timestamps come back in UTC, as on SQLite, whatever the server's default or PGTZ
    # says (a -c timezone=UTC startup option loses to PGTZ).
    await conn.execute("SET TIME ZONE 'UTC'")


class AsyncPostgresBackend:
    """A pool of autocommit connections to one PostgreSQL schema.

    Connection failures are retried ``attempts`` times with backoff; this is safe for
    commits because the store's commits are idempotent. Serialization failures and
    deadlocks (SQLSTATE 40001, 40P01) are retried the same way.
    """

    dialect = "postgresql"

    def __init__(
        self,
        pool: AsyncConnectionPool[Conn],
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

    @classmethod
    async def connect(
        cls,
        conninfo: str,
        *,
        schema: str = "agentckpt",
        min_size: int = 1,
        max_size: int = 10,
        wait: float = 30.0,
        prepare_threshold: int | None = 5,
    ) -> AsyncPostgresBackend:
        """Open a pool; ``wait`` bounds both the first connection and every later checkout.

        Use ``prepare_threshold=None`` behind PgBouncer in transaction mode.
        """
        if not _SCHEMA_NAME.match(schema):
            raise ConfigurationError(
                f"schema name {schema!r} must match {_SCHEMA_NAME.pattern} (lowercase, no quotes)"
            )
        options = f"-c search_path={schema} -c lock_timeout=10s"
        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=wait,
            open=False,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "options": options,
                "prepare_threshold": prepare_threshold,
            },
            name=f"agentckpt-{schema}",
            configure=_utc_session,
        )
        try:
            await pool.open(wait=True, timeout=wait)
        except PoolTimeout as exc:
            await pool.close()
            raise UnavailableError(
                f"could not connect to PostgreSQL within {wait:g} s; check the URL and that "
                "the server is up"
            ) from exc
        return cls(pool, schema=schema, wait=wait)

    async def _run(self, fn: Callable[[Conn], Awaitable[T]], *, writing: bool) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._pool.connection(timeout=self._wait) as conn:
                    return await fn(conn)
            except PoolTimeout as exc:
                raise UnavailableError(
                    f"no PostgreSQL connection free or reachable within {self._wait:g} s"
                ) from exc
            except psycopg.Error as exc:
                if retry_kind(exc) is Retry.NO or attempt >= self._attempts:
                    raise translate(exc, writing=writing) from exc
                await asyncio.sleep(self._backoff * 2 ** (attempt - 1))

    async def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own transaction under an advisory lock."""
        q = self._queries

        async def apply(conn: Conn) -> list[int]:
            applied: list[int] = []
            async with conn.transaction():
                await conn.execute(q["migration_lock"])
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                await conn.execute(q["migrations_table"])
            for migration in load_migrations("postgres"):
                async with conn.transaction():
                    # The lock serializes concurrent migrators; the check under it makes a
                    # migration that another process just applied a no-op here.
                    await conn.execute(q["migration_lock"])
                    cur = await conn.execute(q["applied_migrations"])
                    done = {row["version"] for row in await cur.fetchall()}
                    if migration.version in done:
                        continue
                    await conn.execute(migration.sql.encode())
                    await conn.execute(
                        q["record_migration"],
                        {"version": migration.version, "name": migration.name},
                    )
                    applied.append(migration.version)
            return applied

        try:
            return await self._run(apply, writing=True)
        except MigrationError:
            raise
        except Exception as exc:
            if isinstance(exc, UnavailableError):
                raise
            raise MigrationError(f"migration failed: {exc}") from exc

    async def applied_migrations(self) -> list[int]:
        """The recorded migration versions; empty when the schema was never migrated."""

        async def read(conn: Conn) -> list[int]:
            cur = await conn.execute(
                "SELECT to_regclass('schema_migrations') IS NOT NULL AS present"
            )
            row = await cur.fetchone()
            if not row or not row["present"]:
                return []
            cur = await conn.execute(self._queries["applied_migrations"])
            return [r["version"] for r in await cur.fetchall()]

        return await self._run(read, writing=False)

    async def read(self, name: str, params: Params) -> list[Row]:
        """Run a named read-only statement."""
        sql = self._queries[name]

        async def read(conn: Conn) -> list[Row]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall() if cur.description else []

        return await self._run(read, writing=False)

    async def write(self, name: str, params: Params) -> list[Row]:
        """Run a named single-statement write; autocommit makes it its own transaction."""
        sql = self._queries[name]

        async def write(conn: Conn) -> list[Row]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall() if cur.description else []

        return await self._run(write, writing=True)

    async def write_many(self, name: str, params: Sequence[Params]) -> None:
        """Run a named write per parameter set in one transaction (pipelined)."""
        sql = self._queries[name]

        async def write(conn: Conn) -> None:
            async with conn.transaction(), conn.cursor() as cur:
                await cur.executemany(sql, params)

        await self._run(write, writing=True)

    async def commit(self, write: StepWrite) -> CommitOutcome:
        """One statement: guard, blobs, history, prune, seal and the step row; or nothing."""
        params = write.params() | _blob_arrays(write.blobs) | _history_arrays(write.history)
        q = self._queries

        async def commit(conn: Conn) -> CommitOutcome:
            cur = await conn.execute(q["commit_step"], params)
            row = await cur.fetchone()
            if row is not None:
                return Committed(row["created_at"], row["updated_at"])
            cur = await conn.execute(q["commit_probe"], params)
            return Refused(await cur.fetchone())

        return await self._run(commit, writing=True)

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()
