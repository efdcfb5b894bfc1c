"""Small helpers shared by the run-loop tests."""

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
    options = f"-c search_path={target.options['schema']}"
    with psycopg.connect(target.location, autocommit=True, options=options) as conn:
        cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def counter_step(ctx: Any) -> Any:
    """A minimal step: count up and remember which step did it."""
    ctx.state["n"] += 1
    ctx.state["seen"].append(ctx.step)
    return ctx.state


# Makes a one-step delta smaller than the state, as in real runs (a tiny state would be
# stored whole at every step, since its delta would not be smaller).
PROMPT = "You are a careful agent that counts. " * 8


def counter_state() -> dict[str, Any]:
    """The initial state of :func:`counter_step`."""
    return {"prompt": PROMPT, "n": 0, "seen": []}


def core(state: dict[str, Any]) -> dict[str, Any]:
    """The state without its padding."""
    return {k: v for k, v in state.items() if k != "prompt"}
