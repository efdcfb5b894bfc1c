"""Hash partitions: the layout migrate makes, and pruning to one partition on every hot
statement."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt.errors import ConfigurationError, MigrationError
from tests.scale.hot import COMMIT_BATCH, HOT, STEP, explain
from tests.scale.partitions.conftest import PARTITIONS

RUN_TABLES = {
    "runs", "steps", "blobs", "effects", "history", "events",
    "run_threads", "step_index", "step_writes",
}  # fmt: skip


def _conn(url: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(url.split("?")[0], autocommit=True)
    conn.execute("SET search_path = agentckpt")
    return conn


def test_every_run_table_is_hash_partitioned_keeping_keys_and_settings(url: str) -> None:
    with _conn(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, p.partstrat, (SELECT count(*) FROM pg_inherits i "
            "WHERE i.inhparent = c.oid) FROM pg_partitioned_table p "
            "JOIN pg_class c ON c.oid = p.partrelid"
        ).fetchall()
        assert {r[0] for r in rows} == RUN_TABLES
        assert {(r[1], r[2]) for r in rows} == {("h", PARTITIONS)}
        fks = conn.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' "
            "AND conrelid::regclass::text IN ('run_threads', 'step_index', 'step_writes')"
        ).fetchall()
        assert {"run_threads_run", "step_index_run", "step_writes_run"} <= {f[0] for f in fks}
        options = conn.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN ('runs_p0', 'steps_p3')"
        ).fetchall()
        assert dict(options) == {
            "runs_p0": ["fillfactor=50"],
            "steps_p3": ["toast_tuple_target=8160"],
        }
        # Each partition keeps its parent's column storage (migration 0012).
        storage = conn.execute(
            "SELECT attrelid::regclass::text, attstorage FROM pg_attribute "
            "WHERE attrelid IN ('steps_p3'::regclass, 'blobs_p1'::regclass) "
            "AND attname IN ('payload', 'data')"
        ).fetchall()
        assert dict(storage) == {"steps_p3": "e", "blobs_p1": "e"}
        assert conn.execute("SELECT to_regclass('runs_agent') IS NOT NULL").fetchone() == (True,)


# On one server a commit is commit_step (a batch of one write) or commit_steps (the
# routed statements are Citus's); an INSERT of VALUES routes its row to one partition at
# execution, so its plan names none.
SCANNING = [h for h in HOT if not h[1].startswith("routed_")] + [
    ("commit: the batch statement", "commit_steps", COMMIT_BATCH),
    # commit_step takes a write's own parameters (StepWrite.params()), token as write_token.
    ("commit: the single-write statement", "commit_step", {**STEP, "write_token": STEP["token"]}),
]


@pytest.mark.parametrize(("what", "name", "params"), SCANNING, ids=[h[0] for h in SCANNING])
def test_hot_statement_prunes_to_one_partition(
    url: str, what: str, name: str, params: dict[str, Any]
) -> None:
    with _conn(url) as conn:
        plan = "\n".join(explain(conn, name, params))
    touched = set(re.findall(r"\b(\w+)_p(\d+)\b", plan))
    per_table: dict[str, set[str]] = {}
    for table, part in touched:
        per_table.setdefault(table, set()).add(part)
    assert per_table, f"{what}: no partition in the plan:\n{plan}"
    assert all(len(parts) == 1 for parts in per_table.values()), f"{what}:\n{plan}"


def test_a_schema_with_rows_is_not_partitioned_behind_the_users_back(pg_url: str) -> None:
    with Store.connect(pg_url) as store:
        store.create_run()
    with pytest.raises(MigrationError, match=r"runs already has rows"):
        Store.connect(pg_url + "&partitions=4")
    with _conn(pg_url) as conn:
        partitioned = conn.execute("SELECT count(*) FROM pg_partitioned_table").fetchone()
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()
    assert partitioned == (0,)
    assert runs == (1,)


def test_another_partition_count_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"already has 4 hash partitions"):
        Store.connect(url.replace(f"partitions={PARTITIONS}", "partitions=8"))


def test_one_partition_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"partitions=1"):
        Store.connect("postgresql://127.0.0.1:1/x?partitions=1")
