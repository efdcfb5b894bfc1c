"""The documented schema equals the migrated one; keys fit partitioning; generated code is fresh.

``sql/<dialect>/schema.sql`` is documentation that must not drift: a database built from it
is compared, catalog entry by catalog entry, with one built by the migrations.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

import agentckpt
from agentckpt import Store
from agentckpt._backends.factory import parse_url
from agentckpt._backends.sql import load_migrations, load_queries, schema_sql

ROOT = Path(__file__).resolve().parents[2]
Catalog = dict[str, list[tuple[Any, ...]]]


# -- PostgreSQL ------------------------------------------------------------------------


def pg_catalog(conn: psycopg.Connection[Any], schema: str) -> Catalog:
    """Everything about a schema's tables that DDL decides, without the schema's name."""

    def query(sql: str) -> list[tuple[Any, ...]]:
        return conn.execute(sql, {"s": schema}).fetchall()

    return {
        "objects": query(
            "SELECT c.relname, c.relkind FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s ORDER BY 1"
        ),
        "columns": query(
            "SELECT table_name, ordinal_position, column_name, data_type, udt_name, "
            "character_maximum_length, numeric_precision, column_default, is_nullable, "
            "collation_name, is_identity, is_generated "
            "FROM information_schema.columns WHERE table_schema = %(s)s ORDER BY 1, 2"
        ),
        "constraints": query(
            "SELECT cl.relname, co.conname, co.contype, "
            "replace(pg_get_constraintdef(co.oid), %(s)s || '.', '') "
            "FROM pg_constraint co JOIN pg_class cl ON cl.oid = co.conrelid "
            "JOIN pg_namespace n ON n.oid = co.connamespace WHERE n.nspname = %(s)s "
            "ORDER BY 1, 2"
        ),
        "indexes": query(
            "SELECT tablename, indexname, replace(indexdef, %(s)s || '.', '') "
            "FROM pg_indexes WHERE schemaname = %(s)s ORDER BY 1, 2"
        ),
        "storage": query(
            "SELECT cl.relname, cl.reloptions FROM pg_class cl "
            "JOIN pg_namespace n ON n.oid = cl.relnamespace "
            "WHERE n.nspname = %(s)s AND cl.relkind = 'r' ORDER BY 1"
        ),
        # STORAGE of each column (migration 0012): whether TOAST compresses a long value.
        "column_storage": query(
            "SELECT cl.relname, a.attname, a.attstorage FROM pg_attribute a "
            "JOIN pg_class cl ON cl.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = cl.relnamespace "
            "WHERE n.nspname = %(s)s AND cl.relkind = 'r' AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY 1, 2"
        ),
    }


@pytest.fixture
def pg_schema_pair(pg_server_dsn: str) -> Iterator[tuple[psycopg.Connection[Any], str, str]]:
    """A connection and two fresh schema names: one to migrate, one for schema.sql."""
    base = pg_server_dsn.split("?")[0]
    migrated, documented = (f"t_{uuid.uuid4().hex[:12]}" for _ in range(2))
    with psycopg.connect(base, autocommit=True) as conn:
        try:
            yield conn, migrated, documented
        finally:
            for schema in (migrated, documented):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.postgres
def test_postgres_schema_sql_matches_migrations(
    pg_server_dsn: str, pg_schema_pair: tuple[psycopg.Connection[Any], str, str]
) -> None:
    conn, migrated, documented = pg_schema_pair
    base = pg_server_dsn.split("?")[0]
    with Store.connect(f"{base}?schema={migrated}"):
        pass
    conn.execute(f'CREATE SCHEMA "{documented}"')
    conn.execute(f'SET search_path TO "{documented}"')
    conn.execute(schema_sql("postgres").encode())
    conn.execute("RESET search_path")

    want, got = pg_catalog(conn, migrated), pg_catalog(conn, documented)
    assert want["columns"], "the migrated schema has no tables"
    for part in want:
        assert got[part] == want[part], f"schema.sql differs from the migrations in {part}"


def pg_unique_keys(conn: psycopg.Connection[Any], schema: str) -> dict[str, list[list[str]]]:
    rows = conn.execute(
        "SELECT t.relname, i.relname, "
        "       array(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY k(attnum, ord) "
        "             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
        "             ORDER BY k.ord) "
        "FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
        "JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_namespace n ON n.oid = t.relnamespace "
        "WHERE n.nspname = %s AND (x.indisunique OR x.indisprimary)",
        (schema,),
    ).fetchall()
    keys: dict[str, list[list[str]]] = {}
    for table, _index, columns in rows:
        keys.setdefault(table, []).append(list(columns))
    return keys


@pytest.mark.postgres
def test_postgres_keys_include_run_id(pg_url: str) -> None:
    with Store.connect(pg_url):
        pass
    target = parse_url(pg_url)
    schema = target.settings["schema"]
    with psycopg.connect(target.location, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        ]
        keys = pg_unique_keys(conn, schema)
        primary = {
            r[0]
            for r in conn.execute(
                "SELECT cl.relname FROM pg_constraint co JOIN pg_class cl ON cl.oid = co.conrelid "
                "JOIN pg_namespace n ON n.oid = co.connamespace "
                "WHERE n.nspname = %s AND co.contype = 'p'",
                (schema,),
            )
        }
    assert "steps" in tables
    assert set(tables) <= primary, "every table has a primary key"
    for table in tables:
        # Tables of the store, not of a run (on Citus, reference tables).
        if table in ("schema_migrations", "data_keys"):
            continue
        for columns in keys[table]:
            assert "run_id" in columns, f"{table}: unique key {columns} lacks run_id"


@pytest.mark.postgres
def test_postgres_compressed_payloads_are_not_recompressed(pg_url: str) -> None:
    """Every bytea column stored beside a ``codec`` holds compressed, incompressible or
    encrypted bytes, so TOAST must move it out of line without a compression attempt
    (migration 0012); every other bytea column (``runs.config``: exact JSON) keeps the
    default and may still be compressed."""
    with Store.connect(pg_url):
        pass
    target = parse_url(pg_url)
    schema = target.settings["schema"]
    with psycopg.connect(target.location, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.table_name, c.column_name, a.attstorage, "
            "  EXISTS (SELECT 1 FROM information_schema.columns k "
            "          WHERE k.table_schema = c.table_schema "
            "          AND k.table_name = c.table_name AND k.column_name = 'codec') "
            "FROM information_schema.columns c "
            "JOIN pg_namespace n ON n.nspname = c.table_schema "
            "JOIN pg_class cl ON cl.relnamespace = n.oid AND cl.relname = c.table_name "
            "JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attname = c.column_name "
            "WHERE c.table_schema = %s AND c.data_type = 'bytea'",
            (schema,),
        ).fetchall()
    storage = {(table, column): (kind, has_codec) for table, column, kind, has_codec in rows}
    packed = {key for key, (_, has_codec) in storage.items() if has_codec}
    # checksum, write_token and key material are short: never toasted, default storage.
    packed -= {("steps", "checksum"), ("steps", "write_token")}
    assert packed == {
        ("steps", "payload"),
        ("blobs", "data"),
        ("effects", "payload"),
        ("history", "payload"),
        ("events", "payload"),
        ("step_writes", "payload"),
    }
    for key in packed:
        assert storage[key][0] == "e", f"{key}: STORAGE {storage[key][0]!r}, not EXTERNAL"
    assert storage[("runs", "config")][0] == "x", "runs.config: exact JSON, compressible"


# -- SQLite ----------------------------------------------------------------------------


def normalize_sql(sql: str | None) -> str | None:
    """DDL text without comments, layout and identifier quotes (SQLite quotes the name of
    a table it renamed: ``CREATE TABLE "run_threads"``)."""
    if sql is None:
        return None
    sql = re.sub(r'"(\w+)"', r"\1", sql)
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"\s+", " ", sql).strip()
    return re.sub(r"\s*([(),])\s*", r"\1", sql)


def sqlite_catalog(path: Path) -> Catalog:
    with closing(sqlite3.connect(path)) as conn:
        master = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        catalog: Catalog = {
            "objects": [(t, n, tbl, normalize_sql(sql)) for t, n, tbl, sql in master],
        }
        for kind, name, _tbl, _sql in master:
            if kind == "table":
                catalog[f"{name}: columns"] = conn.execute(
                    f"PRAGMA table_xinfo('{name}')"
                ).fetchall()
                catalog[f"{name}: indexes"] = conn.execute(
                    f"PRAGMA index_list('{name}')"
                ).fetchall()
                catalog[f"{name}: foreign keys"] = conn.execute(
                    f"PRAGMA foreign_key_list('{name}')"
                ).fetchall()
            elif kind == "index":
                catalog[f"{name}: index columns"] = conn.execute(
                    f"PRAGMA index_xinfo('{name}')"
                ).fetchall()
    return catalog


def test_sqlite_schema_sql_matches_migrations(tmp_path: Path) -> None:
    migrated = tmp_path / "migrated.db"
    documented = tmp_path / "documented.db"
    with Store.connect(f"sqlite:///{migrated}"):
        pass
    with closing(sqlite3.connect(documented)) as conn:
        conn.executescript(schema_sql("sqlite"))

    want, got = sqlite_catalog(migrated), sqlite_catalog(documented)
    assert any(name == "steps" for _t, name, _tbl, _sql in want["objects"])
    assert sorted(got) == sorted(want)
    for part in want:
        assert got[part] == want[part], f"schema.sql differs from the migrations in {part}"


def test_sqlite_keys_include_run_id(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    with Store.connect(f"sqlite:///{path}"):
        pass
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        assert "steps" in tables
        for table in tables:
            if table in ("schema_migrations", "data_keys"):
                continue
            columns = conn.execute(f"PRAGMA table_info('{table}')").fetchall()
            pk = [c[1] for c in sorted(columns, key=lambda c: c[5]) if c[5] > 0]
            assert "run_id" in pk, f"{table}: primary key {pk} lacks run_id"
            for _seq, index, unique, _origin, _partial in conn.execute(
                f"PRAGMA index_list('{table}')"
            ).fetchall():
                if unique:
                    cols = [c[2] for c in conn.execute(f"PRAGMA index_info('{index}')")]
                    assert "run_id" in cols, f"{table}: unique index {index} {cols} lacks run_id"


# -- the shipped SQL, the generated code, the public names -----------------------------


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_shipped_sql_is_well_formed(dialect: str) -> None:
    versions = [m.version for m in load_migrations(dialect)]
    assert versions == list(range(1, len(versions) + 1))
    queries = load_queries(dialect)
    assert {"commit_probe", "load_chain", "list_steps", "delete_run"} <= set(queries)
    assert "CREATE TABLE steps" in schema_sql(dialect)


def test_generated_sync_code_is_fresh() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/unasync.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_public_names() -> None:
    exported = agentckpt.__all__
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    namespace: dict[str, Any] = {}
    exec(f"from agentckpt import {', '.join(exported)}", namespace)  # every name imports
    assert set(exported) <= set(namespace)

    missing = sorted(
        name
        for name, value in vars(agentckpt).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("agentckpt")
        and name not in exported
    )
    assert missing == [], f"public but not in __all__: {missing}"

    # Every exception and record type users may catch or receive is exported.
    for module in (agentckpt.errors, agentckpt.records):
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                assert name in exported, f"{module.__name__}.{name} is not exported"
    assert agentckpt.__version__
