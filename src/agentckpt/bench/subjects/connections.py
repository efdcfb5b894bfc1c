"""Connections for the baseline subjects, set up like agentckpt's own.

PostgreSQL: a psycopg ``AsyncConnectionPool`` of autocommit connections of the same
size as agentckpt's pool, so every statement is its own durable transaction. SQLite: one
connection driven from asyncio through one worker thread, in WAL mode with
``synchronous=FULL`` (durable on power loss), exactly as agentckpt's SQLite backend.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from agentckpt.bench.subjects.base import Place

__all__ = [
    "AsyncSqlite",
    "Database",
    "PgConn",
    "PgDatabase",
    "open_database",
    "open_pg_pool",
    "sqlite_pragmas",
]

T = TypeVar("T")
PgConn = psycopg.AsyncConnection[tuple[Any, ...]]

# The same durability as agentckpt's SQLite backend: WAL, and FULL so that an
# acknowledged commit survives power loss.
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA busy_timeout=30000")


def sqlite_pragmas() -> tuple[str, ...]:
    """The pragmas every SQLite subject runs on its connection."""
    return SQLITE_PRAGMAS


class Database(Protocol):
    """The three calls a baseline needs, on either dialect."""

    dialect: str

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement as its own transaction; its rows (or none)."""

    async def script(self, sql: str) -> None:
        """Run several statements (schema setup)."""

    async def close(self) -> None:
        """Release the connections."""


async def open_pg_pool(
    place: Place, *, prepare_threshold: int | None = 5, **kwargs: Any
) -> AsyncConnectionPool[Any]:
    """An open pool of autocommit connections whose search path is the place's schema."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        place.location,
        min_size=place.pool_size,
        max_size=place.pool_size,
        open=False,
        kwargs={
            "autocommit": True,
            "options": place.pg_options,
            "prepare_threshold": prepare_threshold,
        }
        | kwargs,
    )
    await pool.open(wait=True, timeout=30)
    return pool


class PgDatabase:
    """A :class:`Database` on a pool of autocommit PostgreSQL connections."""

    dialect = "postgresql"

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit: its own transaction) and return its rows."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def script(self, sql: str) -> None:
        """Run several statements in one round trip."""
        async with self.pool.connection() as conn:
            await conn.execute(sql.encode())

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()


class AsyncSqlite:
    """One SQLite connection in autocommit mode, used from asyncio via one thread."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-sqlite")
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        for pragma in SQLITE_PRAGMAS:
            self._conn.execute(pragma)

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection; use it only inside :meth:`call`."""
        return self._conn

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the connection's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, params).fetchall()

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (its own transaction) and return its rows."""
        return await self.call(partial(self._fetch, sql, params))

    async def script(self, sql: str) -> None:
        """Run several statements (schema setup)."""
        await self.call(partial(self._conn.executescript, sql))

    async def close(self) -> None:
        """Close the connection and stop the thread."""
        await self.call(self._conn.close)
        self._executor.shutdown(wait=True)


async def open_database(place: Place) -> Database:
    """A :class:`Database` on ``place``; a PostgreSQL schema must already exist."""
    if place.dialect == "sqlite":
        return AsyncSqlite(place.location)
    return PgDatabase(await open_pg_pool(place))
