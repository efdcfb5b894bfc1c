"""Raw SQL on a test store's own database, to set up or inspect what the API does not show."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import psycopg

from agentckpt._backends.factory import parse_url


def run_sql(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the store's database with ``?`` placeholders; commit it."""
    target = parse_url(url)
    if target.dialect == "sqlite":
        with closing(sqlite3.connect(target.location)) as conn, conn:
            return conn.execute(sql, params).fetchall()
    options = f"-c search_path={target.settings['schema']}"
    with psycopg.connect(target.location, autocommit=True, options=options) as conn:
        cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []
