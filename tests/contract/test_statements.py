"""The commit statement stays one psycopg can keep prepared.

psycopg keeps a statement prepared on a connection only when its text is shorter than
4096 characters; ``commit_steps`` runs on every PostgreSQL commit, so re-parsing it each
time would cost the hot path. The write token (issue 12) added to it must not push it
over.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import Store
from agentckpt._backends.sql import load_queries

PSYCOPG_PREPARE_LIMIT = 4096


def test_commit_steps_is_short_enough_to_stay_prepared() -> None:
    assert len(load_queries("postgres")["commit_steps"]) < PSYCOPG_PREPARE_LIMIT


@pytest.mark.postgres
def test_commit_steps_is_prepared_after_a_few_commits(pg_url: str) -> None:
    # Lone commits: the statement prepared is commit_step, the single-write twin of
    # commit_steps (test_single_commit.py); both insert the step with its write token.
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1&commit_senders=1") as store:
        run = store.create_run()
        for n in range(1, 8):
            store.commit(run.run_id, {"n": n})
        backend: Any = store.backend
        with backend._pool.connection() as conn:
            rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    statements = [row["statement"] for row in rows]
    assert any("INSERT INTO steps AS s" in s and "write_token" in s for s in statements)


def test_the_binary_reads_are_queries_without_json_columns() -> None:
    """The reads that come back in binary exist, and return no json or jsonb column,
    whose binary loaders would not be the text loaders' (the config is bytea, the
    metadata cast to text)."""
    from agentckpt._backends import postgres_async

    queries = load_queries("postgres")
    for name in postgres_async._BINARY_READS:
        select = queries[name].lower()
        assert "json" not in select, name


@pytest.mark.postgres
@pytest.mark.parametrize("threshold", ["", "&prepare_threshold=none"])
def test_the_resume_read_is_prepared_on_its_first_run(pg_url: str, threshold: str) -> None:
    """resume_run is prepared on a connection the first time it runs there (not at
    psycopg's sixth, every run before it planned again); with prepare_threshold=none
    (PgBouncer's transaction mode) nothing is."""
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1{threshold}") as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        store.resume_run(run.run_id)
        backend: Any = store.backend
        with backend._pool.connection() as conn:
            rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    prepared = [row["statement"] for row in rows if "CROSS JOIN LATERAL" in row["statement"]]
    assert len(prepared) == (0 if threshold else 1)
