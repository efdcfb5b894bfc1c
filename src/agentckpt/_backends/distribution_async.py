"""Lay out agentckpt's tables after the migrations: on Citus, or in hash partitions.

The numbered migrations stay the only source of the schema: they create ordinary tables,
and this module, run by the driver at the end of every ``migrate`` (under the same
advisory lock), reshapes them once:

- **Citus** (the ``citus`` extension is installed in the database and the setting
  ``distribute`` is ``auto``): every table with a ``run_id`` column is distributed by
  ``run_id``, co-located with ``runs`` (so one run's rows share a shard and a worker, and
  every per-run statement is routed to one node); every other table
  (``schema_migrations``) becomes a reference table. ``distribute=off`` leaves the
  tables as the migrations made them, for users who distribute by hand.
- **Hash partitions** (``partitions=N``, N >= 2, plain PostgreSQL): every table with a
  ``run_id`` column is rebuilt ``PARTITION BY HASH (run_id)`` with N partitions
  ``<table>_p<i>``, keeping its columns, defaults, checks, keys, indexes, foreign keys
  and storage settings. Only empty tables are rebuilt (a fresh schema): partitioning a
  table with rows would mean copying it under a lock, which is a job for the operator.

Both are idempotent: a table already distributed (or partitioned) is left alone, so a
later migration's new table is laid out the same way the next time ``migrate`` runs.

``distribution.py`` is generated from this file by ``scripts/unasync.py``; edit this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from agentckpt.errors import ConfigurationError, MigrationError

__all__ = ["Layout", "LayoutReport", "citus_installed", "lay_out"]

# The table every other one is co-located with: its row is each commit's guard.
ANCHOR = "runs"
# Tables holding a run_id column, in dependency order (runs first: the others reference it).
_RUN_TABLES = """
SELECT c.relname AS name, c.relkind = 'p' AS partitioned, c.reltuples, (
    SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid) AS parts
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
              AND a.attname = 'run_id' AND NOT a.attisdropped)
ORDER BY c.relname <> 'runs', c.relname
"""
_OTHER_TABLES = """
SELECT c.relname AS name
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind = 'r' AND NOT c.relispartition
  AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                  AND a.attname = 'run_id' AND NOT a.attisdropped)
ORDER BY c.relname
"""
_CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS present"
# pg_dist_partition.partmethod: 'h' hash-distributed, 'n' reference (or Citus local).
_DISTRIBUTED = """
SELECT c.relname AS name, p.partmethod AS method
FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s
"""
_INDEXES = """
SELECT pg_get_indexdef(i.indexrelid) AS definition
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relname = %(table)s
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
"""
_CONSTRAINTS = """
SELECT k.conname AS name, k.contype AS type, pg_get_constraintdef(k.oid) AS definition,
       c.relname AS table
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND k.contype IN ('p', 'u', 'f')
ORDER BY k.contype = 'f', c.relname, k.conname
"""
_RELOPTIONS = """
SELECT coalesce(array_to_string(c.reloptions, ', '), '') AS options
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relname = %(table)s
"""


@dataclass(frozen=True, slots=True)
class Layout:
    """How the driver lays out the tables: ``distribute`` is ``auto`` (Citus when the
    extension is installed) or ``off``; ``partitions`` is 0 (none) or N >= 2."""

    distribute: str = "auto"
    partitions: int = 0


@dataclass(frozen=True, slots=True)
class LayoutReport:
    """What :func:`lay_out` found and did: ``mode`` is ``citus``, ``partitions`` or
    ``plain``; ``changed`` names the tables it distributed or partitioned just now."""

    mode: str
    changed: tuple[str, ...]


async def citus_installed(conn: psycopg.AsyncConnection[Any]) -> bool:
    """True when the connection's database has the ``citus`` extension."""
    cur = await conn.execute(_CITUS)
    row = await cur.fetchone()
    return bool(row and _get(row, "present"))


def _get(row: Any, key: str) -> Any:
    return row[key] if isinstance(row, dict) else row[0]


async def _rows(conn: psycopg.AsyncConnection[Any], query: str, **params: Any) -> list[Any]:
    cur = await conn.execute(query, params)
    return list(await cur.fetchall())


async def lay_out(conn: psycopg.AsyncConnection[Any], schema: str, layout: Layout) -> LayoutReport:
    """Distribute or partition the tables of ``schema`` as ``layout`` says; the caller
    holds the migration lock, in a transaction."""
    citus = layout.distribute == "auto" and await citus_installed(conn)
    if citus and layout.partitions:
        raise ConfigurationError(
            f"setting partitions={layout.partitions} on Citus: the tables are already "
            "split into shards by run_id; use partitions=0, or distribute=off to "
            "partition a Citus coordinator's local tables"
        )
    if citus:
        return LayoutReport("citus", await _distribute(conn, schema))
    if layout.partitions:
        return LayoutReport("partitions", await _partition(conn, schema, layout.partitions))
    return LayoutReport("plain", ())


async def _distribute(conn: psycopg.AsyncConnection[Any], schema: str) -> tuple[str, ...]:
    done = {r["name"] for r in await _rows(conn, _DISTRIBUTED, schema=schema)}
    changed: list[str] = []
    for row in await _rows(conn, _RUN_TABLES, schema=schema):
        name = row["name"]
        if name in done:
            continue
        target = sql.Literal(f"{schema}.{name}")
        colocate = sql.Literal("default" if name == ANCHOR else f"{schema}.{ANCHOR}")
        await conn.execute(
            sql.SQL("SELECT create_distributed_table({}, 'run_id', colocate_with => {})").format(
                target, colocate
            )
        )
        changed.append(name)
    for row in await _rows(conn, _OTHER_TABLES, schema=schema):
        if row["name"] not in done:
            await conn.execute(
                sql.SQL("SELECT create_reference_table({})").format(
                    sql.Literal(f"{schema}.{row['name']}")
                )
            )
            changed.append(row["name"])
    return tuple(changed)


async def _partition(
    conn: psycopg.AsyncConnection[Any], schema: str, count: int
) -> tuple[str, ...]:
    tables = await _rows(conn, _RUN_TABLES, schema=schema)
    already = [t for t in tables if t["partitioned"]]
    for table in already:
        if table["parts"] != count:
            raise ConfigurationError(
                f"setting partitions={count}, but table {schema}.{table['name']} already "
                f"has {table['parts']} hash partitions; repartitioning is not automatic"
            )
    todo = [t["name"] for t in tables if not t["partitioned"]]
    if not todo:
        return ()
    for name in todo:
        cur = await conn.execute(
            sql.SQL("SELECT EXISTS (SELECT 1 FROM {}) AS rows").format(sql.Identifier(name))
        )
        row = await cur.fetchone()
        if row and _get(row, "rows"):
            raise MigrationError(
                f"setting partitions={count}: table {schema}.{name} already has rows, and "
                "only empty tables are partitioned automatically; partition it by hand "
                "(PARTITION BY HASH (run_id)) or use a fresh schema"
            )
    keys = [k for k in await _rows(conn, _CONSTRAINTS, schema=schema)]
    foreign = [k for k in keys if k["type"] == "f"]
    # Foreign keys between the tables are dropped first and made again at the end, once
    # both ends are partitioned (PostgreSQL 12+ allows foreign keys to partitioned tables).
    for key in foreign:
        await conn.execute(
            sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                sql.Identifier(key["table"]), sql.Identifier(key["name"])
            )
        )
    for name in todo:
        await _rebuild(conn, schema, name, count, [k for k in keys if k["table"] == name])
    for key in foreign:
        await conn.execute(
            sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(
                sql.Identifier(key["table"]), sql.Identifier(key["name"])
            )
            + sql.SQL(key["definition"])
        )
    return tuple(todo)


async def _rebuild(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    name: str,
    count: int,
    keys: list[Any],
) -> None:
    """Replace the empty table ``name`` by a hash-partitioned one of the same shape."""
    indexes = [r["definition"] for r in await _rows(conn, _INDEXES, schema=schema, table=name)]
    options = (await _rows(conn, _RELOPTIONS, schema=schema, table=name))[0]["options"]
    table, old = sql.Identifier(name), sql.Identifier(f"{name}__unpartitioned")
    await conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(table, old))
    await conn.execute(
        sql.SQL(
            "CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            "INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMMENTS) "
            "PARTITION BY HASH (run_id)"
        ).format(table, old)
    )
    # Dropped before the keys and indexes are made again, so they keep their names.
    await conn.execute(sql.SQL("DROP TABLE {}").format(old))
    for key in keys:
        if key["type"] != "f":
            await conn.execute(
                sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(
                    table, sql.Identifier(key["name"])
                )
                + sql.SQL(key["definition"])
            )
    for definition in indexes:
        await conn.execute(sql.SQL(definition))
    storage = sql.SQL(f" WITH ({options})") if options else sql.SQL("")
    for i in range(count):
        await conn.execute(
            sql.SQL(
                "CREATE TABLE {} PARTITION OF {} FOR VALUES WITH (MODULUS {}, REMAINDER {})"
            ).format(sql.Identifier(f"{name}_p{i}"), table, sql.Literal(count), sql.Literal(i))
            + storage
        )


_NODES = """
SELECT nodename, nodeport, noderole, isactive, groupid = 0 AS coordinator
FROM pg_dist_node ORDER BY groupid, nodeport
"""
_CITUS_TABLES = """
SELECT c.relname AS name, p.partmethod AS method, p.colocationid AS colocation,
       (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = c.oid) AS shards
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname
"""


async def describe(conn: psycopg.AsyncConnection[Any], schema: str) -> dict[str, Any]:
    """The layout as it is: ``mode`` (``citus``, ``partitions`` or ``plain``); on Citus
    the ``nodes`` and each table's ``method`` ('h' distributed, 'n' reference, None
    local), ``colocation`` and ``shards``; with partitions, each table's partition count.
    """
    tables = await _rows(conn, _RUN_TABLES, schema=schema)
    if await citus_installed(conn):
        return {
            "mode": "citus",
            "nodes": await _rows(conn, _NODES),
            "tables": await _rows(conn, _CITUS_TABLES, schema=schema),
            "run_tables": [t["name"] for t in tables],
        }
    parts = {t["name"]: t["parts"] for t in tables if t["partitioned"]}
    return {"mode": "partitions" if parts else "plain", "partitions": parts}
