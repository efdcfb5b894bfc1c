"""Where each subject's data lives, and how much it takes once the run is over.

PostgreSQL: one schema per subject and workload, dropped and created fresh before it
runs; its size is ``pg_total_relation_size`` (heap, TOAST and indexes) summed over every
table in the schema. SQLite: one file per subject and workload in a temporary directory;
its size is the file's after ``PRAGMA wal_checkpoint(TRUNCATE)`` (plus any WAL left).
"""

from __future__ import annotations

import asyncio
import os
import platform
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from agentckpt.bench.errors import BenchmarkError
from agentckpt.bench.subjects import Place

__all__ = ["PostgresSite", "SqliteSite", "Storage"]


@dataclass(frozen=True, slots=True)
class Storage:
    """Rows and bytes a subject left behind, in total and per table."""

    rows: int
    bytes: int
    tables: dict[str, tuple[int, int]]
    # Bytes once dead row versions are gone: after VACUUM FULL (PostgreSQL), or the
    # file's pages minus its free list (SQLite reuses free pages by itself).
    live_bytes: int

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "rows": self.rows,
            "bytes": self.bytes,
            "live_bytes": self.live_bytes,
            "tables": {name: {"rows": r, "bytes": b} for name, (r, b) in self.tables.items()},
        }


class PostgresSite:
    """A PostgreSQL server; each subject gets its own schema."""

    dialect = "postgresql"

    def __init__(self, url: str, *, pool_size: int, prefix: str = "bench") -> None:
        self.url = url
        self.pool_size = pool_size
        self.prefix = prefix

    async def _conn(self) -> psycopg.AsyncConnection[Any]:
        try:
            return await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise BenchmarkError(f"cannot connect to PostgreSQL at {self.url!r}: {exc}") from exc

    async def prepare(self, label: str) -> Place:
        """A fresh, empty schema ``<prefix>_<label>``."""
        schema = f"{self.prefix}_{label}"
        async with await self._conn() as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        return Place("postgresql", schema, self.url, self.pool_size)

    async def storage(self, place: Place) -> Storage:
        """Rows and ``pg_total_relation_size`` of every table in the place's schema, as the
        run left them (dead row versions included: they take disk until a vacuum), then
        again after ``VACUUM FULL`` of each table."""
        async with await self._conn() as conn:
            sizes = await self._sizes(conn, place)
            tables: dict[str, tuple[int, int]] = {}
            for name, size in sizes.items():
                table = sql.Identifier(place.name, name)
                query = sql.SQL("SELECT count(*) FROM {}").format(table)
                row = await (await conn.execute(query)).fetchone()
                tables[name] = (int(row[0]) if row else 0, size)
            for name in sizes:
                await conn.execute(
                    sql.SQL("VACUUM FULL {}").format(sql.Identifier(place.name, name))
                )
            live = sum((await self._sizes(conn, place)).values())
        return Storage(
            rows=sum(r for r, _ in tables.values()),
            bytes=sum(b for _, b in tables.values()),
            tables=tables,
            live_bytes=live,
        )

    def bytes_now(self, place: Place) -> int:
        """Bytes of the place's tables now, after a plain ``VACUUM`` of each (what
        autovacuum would leave); synchronous, for probes taken between a subject's
        writes (the event loop waits, so no write is in flight)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            names = [
                str(row[0])
                for row in conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                    (place.name,),
                )
            ]
            total = 0
            for name in names:
                table = sql.Identifier(place.name, name)
                conn.execute(sql.SQL("VACUUM {}").format(table))
                row = conn.execute(
                    "SELECT pg_total_relation_size(%s::regclass)", (f'"{place.name}"."{name}"',)
                ).fetchone()
                total += int(row[0]) if row else 0
        return total

    async def vacuum(self, place: Place) -> None:
        """A plain ``VACUUM`` of every table of the place, as autovacuum would run it."""
        async with await self._conn() as conn:
            for name in await self._sizes(conn, place):
                await conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(place.name, name)))

    @staticmethod
    async def _sizes(conn: psycopg.AsyncConnection[Any], place: Place) -> dict[str, int]:
        cur = await conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'm') ORDER BY c.relname",
            (place.name,),
        )
        return {str(name): int(size) for name, size in await cur.fetchall()}

    async def drop(self, place: Place) -> None:
        """Drop the place's schema."""
        async with await self._conn() as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(place.name))
            )

    async def describe(self) -> dict[str, Any]:
        """Server version and the settings that decide write latency."""
        names = (
            "server_version",
            "synchronous_commit",
            "fsync",
            "wal_sync_method",
            "full_page_writes",
            "wal_level",
            "commit_delay",
            "shared_buffers",
            "max_wal_size",
            "autovacuum",
            "default_toast_compression",
        )
        async with await self._conn() as conn:
            found: dict[str, Any] = {}
            for name in names:
                row = await (
                    await conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name)))
                ).fetchone()
                found[name] = row[0] if row else None
        return found


class SqliteSite:
    """A directory of SQLite files; each subject gets its own file."""

    dialect = "sqlite"

    def __init__(self, directory: Path, *, pool_size: int) -> None:
        self.directory = directory
        self.pool_size = pool_size

    async def prepare(self, label: str) -> Place:
        """A path where no database file exists yet."""
        path = self.directory / f"{label}.db"
        await asyncio.to_thread(_remove, str(path))
        return Place("sqlite", str(path), str(path), self.pool_size)

    async def storage(self, place: Place) -> Storage:
        """Rows per table, and the file size after a WAL checkpoint (TRUNCATE)."""
        return await asyncio.to_thread(self._storage, place)

    def _storage(self, place: Place) -> Storage:
        conn = sqlite3.connect(place.location, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
            counts = {
                name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names
            }
            pages = _pages_per_table(conn)
            page_size, page_count, free = (
                conn.execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("page_size", "page_count", "freelist_count")
            )
        finally:
            conn.close()
        size = os.path.getsize(place.location)
        wal = Path(f"{place.location}-wal")
        size += wal.stat().st_size if wal.exists() else 0
        tables = {name: (int(count), pages.get(name, 0)) for name, count in counts.items()}
        return Storage(
            rows=sum(r for r, _ in tables.values()),
            bytes=size,
            tables=tables,
            live_bytes=int(page_size) * (int(page_count) - int(free)),
        )

    def bytes_now(self, place: Place) -> int:
        """The file's bytes now, after a WAL checkpoint; synchronous, for probes."""
        return self._storage(place).bytes

    async def drop(self, place: Place) -> None:
        """Delete the file and its WAL and shared-memory files."""
        await asyncio.to_thread(_remove, place.location)

    async def describe(self) -> dict[str, Any]:
        """SQLite library version and the settings every subject uses."""
        return {
            "sqlite_version": sqlite3.sqlite_version,
            "journal_mode": "wal",
            "synchronous": "full",
            "directory": str(self.directory),
            "filesystem": platform.system(),
        }


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _pages_per_table(conn: sqlite3.Connection) -> dict[str, int]:
    """Bytes of each table with its indexes, from the ``dbstat`` virtual table when the
    SQLite build has it (the total is the file size either way)."""
    try:
        rows = conn.execute(
            "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d "
            "JOIN sqlite_master m ON m.name = d.name GROUP BY m.tbl_name"
        ).fetchall()
    except sqlite3.Error:
        return {}
    return {str(name): int(size) for name, size in rows}
