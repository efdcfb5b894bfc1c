"""The seed's second proof: a long run's storage stays bounded.

1000 steps with snapshot_interval=20 keep at most 1000 / 20 * 2 = 100 step rows, and for
a fixed-size state the stored bytes do not grow with the number of steps.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt._backends.factory import parse_url
from agentckpt.runs import AgentRun
from tests.support.dbsql import run_sql

STEPS = 1000
INTERVAL = 20


def fixed_size_step(ctx: Any) -> Any:
    """Each step replaces a sliding window of 8 messages: the state never grows."""
    digest = hashlib.sha256(f"step {ctx.step}".encode()).hexdigest()
    window = ctx.state["window"]
    window.append({"role": "tool", "content": digest * 2})
    del window[:-8]
    ctx.state["step"] = ctx.step
    return ctx.state


def initial() -> dict[str, Any]:
    return {
        "system": "You are an agent that never stops. " * 10,
        "window": [],
        "step": 0,
    }


def payload_bytes(url: str, run_id: uuid.UUID) -> tuple[int, int]:
    """``(rows, stored payload bytes)`` of the run's kept steps."""
    [(rows, size)] = run_sql(
        url, "SELECT count(*), sum(length(payload)) FROM steps WHERE run_id = ?", str(run_id)
    )
    return int(rows), int(size)


def pg_steps_table_bytes(url: str) -> int:
    """pg_total_relation_size of the steps table (heap, TOAST, indexes) after VACUUM."""
    target = parse_url(url)
    schema = target.settings["schema"]
    with psycopg.connect(target.location, autocommit=True) as conn:
        conn.execute(f'VACUUM "{schema}".steps')
        row = conn.execute(
            "SELECT pg_total_relation_size(%s::regclass)", (f'"{schema}".steps',)
        ).fetchone()
    assert row is not None
    return int(row[0])


def sqlite_pages(url: str) -> int:
    """Pages in use by the SQLite file (after a WAL checkpoint), free pages excluded."""
    run_sql(url, "PRAGMA wal_checkpoint(TRUNCATE)")
    [(pages,)] = run_sql(url, "PRAGMA page_count")
    [(free,)] = run_sql(url, "PRAGMA freelist_count")
    return int(pages) - int(free)


@pytest.mark.timeout(600)
def test_a_1000_step_run_keeps_bounded_rows_and_bytes(url: str) -> None:
    postgres = parse_url(url).dialect == "postgresql"
    run_id = uuid.uuid4()
    measured: dict[int, dict[str, int]] = {}
    # Measured mid-interval (490, 990: a snapshot and 10 deltas each) and at the end.
    with Store.connect(url) as store:
        for target in (490, 990, STEPS):
            store.create_run(run_id, exist_ok=True)
            store.set_status(run_id, "active")  # reaching max_steps completed it
            AgentRun(store, run_id, initial_state=initial, snapshot_interval=INTERVAL).run(
                fixed_size_step, max_steps=target
            )
            rows, size = payload_bytes(url, run_id)
            table = pg_steps_table_bytes(url) if postgres else sqlite_pages(url)
            measured[target] = {"rows": rows, "payload": size, "table": table}
            assert store.latest(run_id).step == target

    # The seed's CI check: rows <= max_steps / interval * 2 (pruning keeps far fewer).
    assert measured[STEPS]["rows"] <= STEPS // INTERVAL * 2
    assert measured[990]["rows"] == measured[490]["rows"] == 11
    # Twice the steps, not twice the bytes (linear growth would double them).
    half, full = measured[490], measured[990]
    assert full["payload"] <= half["payload"] * 1.25, measured
    assert full["table"] <= half["table"] * 1.25, measured
