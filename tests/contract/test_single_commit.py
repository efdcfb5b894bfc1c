"""The single-write statement (``commit_step``) answers as the batch one (``commit_steps``).

A group commit batch of one write without blobs or history, the lone agent's every
commit, goes to PostgreSQL as ``commit_step``, with scalar parameters. These tests replay
the writes a store really sent through both statements and compare what comes back and
what is stored: the same guard (head step and version, lease epoch), the same refusal
and probe, the same rows.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt._backends.sql import load_queries, positional_sql
from agentckpt._core.writes import Committed, Refused
from tests.support.writes import recorded_writes

pytestmark = pytest.mark.postgres

PSYCOPG_PREPARE_LIMIT = 4096


def statements(store: Store) -> list[str]:
    """The statements the backend's pooled connection has prepared."""
    backend: Any = store.backend
    with backend._pool.connection() as conn:
        rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    return [row["statement"] for row in rows]


def stored(store: Store, run_id: uuid.UUID) -> list[dict[str, Any]]:
    backend: Any = store.backend
    with backend._pool.connection() as conn:
        cur = conn.execute(
            "SELECT step, parent_step, kind, is_open, codec, payload, state_version,"
            " write_version, raw_bytes, state_bytes, checksum, write_token"
            " FROM steps WHERE run_id = %s ORDER BY step",
            (run_id,),
        )
        return list(cur.fetchall())


def head(store: Store, run_id: uuid.UUID) -> dict[str, Any]:
    backend: Any = store.backend
    with backend._pool.connection() as conn:
        row = conn.execute(
            "SELECT head_step, head_version, head_open, snapshot_step, chain_bytes, metadata"
            " FROM runs WHERE run_id = %s",
            (run_id,),
        ).fetchone()
    assert row is not None
    return dict(row)


@pytest.mark.parametrize("name", ["commit_step", "commit_step_plain"])
def test_commit_step_is_short_enough_to_stay_prepared(name: str) -> None:
    assert len(load_queries("postgres")[name]) < PSYCOPG_PREPARE_LIMIT


def test_the_plain_statement_refuses_a_write_that_prunes_or_seals(pg_url: str) -> None:
    """commit_step_plain has no prune or seal part: its guard refuses a write that wants
    one, so such a write can never land without them."""
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1&commit_senders=1") as store:
        run = store.create_run().run_id
        writes = recorded_writes(store)
        # A state much larger than its change: step 2 is a delta.
        store.commit(run, {"n": 1, "text": "x" * 4000})
        store.commit(run, {"n": 2, "text": "x" * 4000})
        first, second = writes[-2:]
        assert second.prune_below is None
        assert second.seal_step is None
        backend: Any = store.backend
        plain = positional_sql(load_queries("postgres")["commit_step_plain"])
        for bad in (second._replace(prune_below=1), second._replace(seal_step=1)):
            target = store.create_run().run_id
            assert isinstance(backend.commit_batch([first._replace(run_id=target)])[0], Committed)
            before = stored(store, target), head(store, target)
            with backend._pool.connection() as conn:
                cur = psycopg.RawCursor(conn)
                cur.execute(plain, bad._replace(run_id=target).positional())
                assert cur.fetchall() == []
            assert (stored(store, target), head(store, target)) == before
        # The same write, pruning and sealing nothing, lands through it.
        with backend._pool.connection() as conn:
            cur = psycopg.RawCursor(conn)
            cur.execute(plain, second._replace(run_id=target).positional())
            assert len(cur.fetchall()) == 1


def test_a_lone_commit_is_the_single_statement_and_prepared(pg_url: str) -> None:
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1&commit_senders=1") as store:
        run = store.create_run()
        writes = recorded_writes(store)
        for n in range(1, 8):
            store.commit(run.run_id, {"n": n})
        assert [len(w.blobs) + len(w.history) for w in writes] == [0] * 7
        prepared = statements(store)
    # commit_step (its CTE starts at the guard) is prepared; commit_steps never ran.
    assert any(s.startswith("WITH head AS") and "INSERT INTO steps" in s for s in prepared)
    assert not any("unnest" in s and "INSERT INTO steps" in s for s in prepared)


def test_both_statements_store_the_same_rows_and_refuse_the_same_writes(pg_url: str) -> None:
    """The writes of one run, replayed on two fresh runs: one through commit_step, one
    through commit_steps (in a batch with a write of a run that does not exist)."""
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1&commit_senders=1") as store:
        source = store.create_run(metadata={"a": 1})
        writes = recorded_writes(store)
        state: dict[str, Any] = {"k": list(range(50))}
        for n in range(1, 30):
            state = {**state, "n": n, "text": "x" * (n * 10)}
            store.commit(
                source.run_id,
                state,
                metadata={"n": n} if n % 7 == 0 else None,
                keep_open=n % 5 == 0,
            )
        sent = list(writes)
        # Snapshots prune the chain below them: the prune ran through both statements.
        assert any(w.prune_below is not None for w in sent)
        assert any(w.metadata is not None for w in sent)
        assert any(w.seal_step is not None for w in sent)
        backend: Any = store.backend
        lone = store.create_run(metadata={"a": 1}).run_id
        batched = store.create_run(metadata={"a": 1}).run_id
        missing = uuid.uuid4()
        for write in sent:
            if write.run_id != source.run_id or write.blobs or write.history:
                continue
            one = backend.commit_batch([write._replace(run_id=lone)])
            two = backend.commit_batch(
                [
                    write._replace(run_id=batched),
                    write._replace(run_id=missing),
                ]
            )
            assert [type(o) for o in one] == [Committed]
            assert [type(o) for o in two] == [Committed, Refused]
            assert two[1] == Refused(None)
            # The same write again: refused by the moved head, the same probe back
            # (bar the timestamps of two different rows).
            again_one = backend.commit_batch([write._replace(run_id=lone)])
            again_two = backend.commit_batch(
                [
                    write._replace(run_id=batched),
                    write._replace(run_id=missing),
                ]
            )
            assert isinstance(again_one[0], Refused)
            assert isinstance(again_two[0], Refused)
            probe_one, probe_two = again_one[0].probe, again_two[0].probe
            assert probe_one is not None
            assert probe_two is not None
            ignore = {"created_at", "updated_at"}
            assert {k: v for k, v in probe_one.items() if k not in ignore} == {
                k: v for k, v in probe_two.items() if k not in ignore
            }
        assert stored(store, lone) == stored(store, batched) == stored(store, source.run_id)
        assert head(store, lone) == head(store, batched)


def test_the_guard_refuses_a_stale_head_and_a_stale_epoch(pg_url: str) -> None:
    with Store.connect(f"{pg_url}&pool_min=1&pool_max=1&commit_senders=1") as store:
        run = store.create_run().run_id
        writes = recorded_writes(store)
        store.commit(run, {"n": 1})
        first = writes[-1]
        backend: Any = store.backend
        target = store.create_run().run_id
        before = head(store, target)
        for bad in (
            first._replace(run_id=target, expected_version=first.expected_version + 1),
            first._replace(run_id=target, expected_step=5),
            first._replace(run_id=target, epoch=7),
        ):
            outcome = backend.commit_batch([bad])
            assert isinstance(outcome[0], Refused)
            assert outcome[0].probe is not None
            assert outcome[0].probe["head_step"] is None
            assert stored(store, target) == []
            assert head(store, target) == before
        # The same write with the right guard lands.
        good = backend.commit_batch([first._replace(run_id=target)])
        assert isinstance(good[0], Committed)
