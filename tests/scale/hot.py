"""The hot statements of the store, with parameters for one run, for EXPLAIN tests.

Each is one named query of ``sql/postgres`` and what it serves; ``explain`` runs it
under ``EXPLAIN`` with literal values (Citus cannot plan a parameterized EXPLAIN).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg

from agentckpt._backends.sql import load_queries

STEP: dict[str, Any] = {
    "step": 3,
    "parent_step": 2,
    "kind": "delta",
    "is_open": False,
    "codec": "json",
    "payload": b"{}",
    "state_version": 1,
    "write_version": 1,
    "raw_bytes": 2,
    "state_bytes": 2,
    "checksum": b"c",
    "token": b"t",
    "expected_step": 2,
    "expected_version": 1,
    "epoch": None,
    "snapshot_step": 0,
    "chain_bytes": 2,
    "prune_below": 1,
    "seal_step": 2,
    "metadata": None,
}
# commit_steps (one server's batch commit) for a batch of one write of run 7.
COMMIT_BATCH: dict[str, Any] = {
    **{f"{name}s" if not name.endswith("s") else name: [value] for name, value in STEP.items()},
    "run_ids": [uuid.UUID(int=7)],
    "steps": [3],
    "is_opens": [False],
    "raw_bytes": [2],
    "state_bytes": [2],
    "chain_bytes": [2],
    **{f"blob_{k}": [] for k in ("run_ids", "digests", "codecs", "sizes", "datas")},
    **{f"history_{k}": [] for k in ("run_ids", "seqs", "counts", "codecs", "payloads")},
    "history_raw_bytes": [],
}
# (what it serves, query name, parameters besides run_id)
HOT: list[tuple[str, str, dict[str, Any]]] = [
    ("commit: guard on the head", "routed_guard", STEP),
    ("commit: the step", "routed_step", STEP),
    ("commit: prune", "routed_prune", STEP),
    ("commit: seal", "routed_seal", STEP),
    ("commit: blob", "routed_blob", {"digest": "d", "codec": "raw", "size": 1, "data": b"x"}),
    (
        "commit: history",
        "routed_history",
        {"seq": 1, "step": 3, "item_count": 1, "codec": "json", "payload": b"[]", "raw_bytes": 2},
    ),
    ("commit: probe of a refused write", "commit_probe", {"step": 3}),
    ("latest", "load_chain", {"step": None}),
    ("state at step", "load_chain", {"step": 2}),
    ("resume", "resume_run", {}),
    ("heartbeat", "conversation_heartbeat", {}),
    ("lease claim", "runs_acquire_lease", {"owner": "w", "ttl": 30.0}),
    ("lease renewal", "runs_renew_lease", {"owner": "w", "ttl": 30.0, "epoch": 1}),
    ("effect lookup", "runs_get_effect", {"step": 3, "key": "k"}),
    ("blob get", "get_blob", {"digest": "d"}),
]


def explain(conn: psycopg.Connection[Any], name: str, params: dict[str, Any]) -> list[str]:
    """The plan of the named query for one run, as EXPLAIN (COSTS off) prints it."""
    sql = re.sub(r"%\((\w+)\)b", r"%(\1)s", load_queries("postgres")[name])
    values = {"run_id": uuid.UUID(int=7), **params}
    cur = psycopg.ClientCursor(conn)
    conn.execute("BEGIN")
    try:
        return [row[0] for row in cur.execute("EXPLAIN (COSTS off) " + sql, values).fetchall()]
    finally:
        conn.execute("ROLLBACK")
