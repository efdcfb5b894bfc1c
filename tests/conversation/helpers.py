"""Shared test data and raw SQL access for the conversation tests."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import psycopg

from agentckpt._backends.factory import parse_url

CONFIG: dict[str, Any] = {
    "model": "llama-3-70b",
    "lora_adapters": ["weather-lora-v2", "router-lora-v1"],
    "temperature": 0.3,
    "max_tokens": 4096,
}
TOOLS = ["get_weather", "search_web", "send_email"]
METADATA: dict[str, Any] = {"user_id": "user_abc123", "session_id": "sess_xyz789"}


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


def dump(value: Any) -> str:
    """Text that differs whenever two JSON values differ (key order included)."""
    return json.dumps(value)


def dumps(messages: list[Any]) -> str:
    """The exact JSON text of a list of messages."""
    return dump([m.to_json() for m in messages])


def step_rows(url: str, run_id: Any) -> list[tuple[Any, ...]]:
    """``(step, is_open, write_version)`` of every stored step."""
    rows = run_sql(
        url,
        "SELECT step, is_open, write_version FROM steps WHERE run_id = ? ORDER BY step",
        str(run_id),
    )
    return [(step, bool(is_open), version) for step, is_open, version in rows]
