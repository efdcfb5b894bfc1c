"""Helpers for the framework adapter tests: raw SQL on a store's database, and savers."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import psycopg
import pytest

from agentckpt._backends.factory import parse_url


def run_sql(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the store's database with ``?`` placeholders; commit it."""
    target = parse_url(url)
    if target.dialect == "sqlite":
        with closing(sqlite3.connect(target.location)) as conn, conn:
            return conn.execute(sql, params).fetchall()
    options = f"-c search_path={target.options['schema']}"
    with psycopg.connect(target.location, autocommit=True, options=options) as conn:
        cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


@pytest.fixture
def saver(url: str) -> Iterator[Any]:
    """A LangGraph saver (sync store open) on a fresh SQLite or PostgreSQL database."""
    pytest.importorskip(
        "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
    )
    from agentckpt.integrations.langgraph import AgentckptSaver

    with AgentckptSaver.from_url(url) as opened:
        yield opened
