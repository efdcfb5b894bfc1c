"""A run's next steps written together in one batch (the overlapped run loop's chains)
store what the same writes store one at a time, on both backends.

The writes are those a store really sent for a run, committed one by one; they are
replayed on fresh runs, one at a time on one and in batches on another, and the rows and
heads compared. On PostgreSQL a batch that is one run's steps goes as ``commit_chain``
(one statement); one with metadata, or with steps of several runs, as one statement a
part in one transaction. A refused guard writes nothing of the steps built on it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentckpt import Store
from agentckpt._backends.sql import load_queries
from agentckpt._core.writes import Committed, Refused, StepWrite
from tests.support.dbsql import run_sql
from tests.support.writes import recorded_writes

PSYCOPG_PREPARE_LIMIT = 4096


def rows(url: str, run_id: uuid.UUID) -> list[tuple[Any, ...]]:
    return [
        tuple(row)
        for row in run_sql(
            url,
            "SELECT step, parent_step, kind, is_open, codec, payload, state_version,"
            " write_version, raw_bytes, state_bytes, checksum, write_token"
            " FROM steps WHERE run_id = ? ORDER BY step",
            str(run_id),
        )
    ]


def head(url: str, run_id: uuid.UUID) -> tuple[Any, ...]:
    found = run_sql(
        url,
        "SELECT head_step, head_version, head_open, snapshot_step, chain_bytes, metadata"
        " FROM runs WHERE run_id = ?",
        str(run_id),
    )
    return tuple(found[0])


def source_writes(store: Store, *, metadata: bool) -> list[StepWrite]:
    """The writes of 40 steps of one run: deltas, snapshots that prune the steps before
    them, and (``metadata``) some carrying metadata."""
    source = store.create_run()
    writes = recorded_writes(store)
    state: dict[str, Any] = {"k": list(range(50))}
    for n in range(1, 41):
        state = {**state, "n": n, "text": "x" * (n * 10)}
        store.commit(source.run_id, state, metadata={"n": n} if metadata and n % 7 == 0 else None)
    sent = [w for w in writes if w.run_id == source.run_id]
    assert any(w.prune_below is not None for w in sent)
    return sent


def replay(store: Store, writes: list[StepWrite], size: int) -> uuid.UUID:
    """``writes`` replayed on a new run, ``size`` at a time in one batch; each outcome
    Committed."""
    backend: Any = store.backend
    run_id = store.create_run().run_id
    moved = [w._replace(run_id=run_id) for w in writes]
    for start in range(0, len(moved), size):
        batch = moved[start : start + size]
        outcomes = backend.commit_batch(batch)
        assert [type(o) for o in outcomes] == [Committed] * len(batch)
    return run_id


@pytest.mark.parametrize("metadata", [False, True])
def test_a_runs_steps_in_one_batch_store_what_they_store_one_at_a_time(
    url: str, metadata: bool
) -> None:
    with Store.connect(url) as store:
        writes = source_writes(store, metadata=metadata)
        one = replay(store, writes, 1)
        for size in (2, 3, 7, 40):
            batched = replay(store, writes, size)
            assert rows(url, batched) == rows(url, one)
            assert head(url, batched) == head(url, one)


def test_a_chain_whose_first_guard_is_stale_writes_none_of_its_steps(url: str) -> None:
    with Store.connect(url) as store:
        writes = source_writes(store, metadata=False)
        backend: Any = store.backend
        run_id = replay(store, writes[:10], 1)
        before = (rows(url, run_id), head(url, run_id))
        # Steps 11 to 14, guarded from step 9 on: the head is step 10 already.
        stale = [w._replace(run_id=run_id) for w in writes[9:14]]
        outcomes = backend.commit_batch(stale)
        assert all(isinstance(o, Refused) for o in outcomes)
        assert (rows(url, run_id), head(url, run_id)) == before
        # The next ones, guarded by the head: they land.
        fresh = [w._replace(run_id=run_id) for w in writes[10:14]]
        assert all(isinstance(o, Committed) for o in backend.commit_batch(fresh))
        assert head(url, run_id)[0] == writes[13].step


def test_a_batch_of_several_runs_chains_lands_each_and_refuses_only_the_stale_one(
    url: str,
) -> None:
    with Store.connect(url) as store:
        writes = source_writes(store, metadata=True)
        backend: Any = store.backend
        one = replay(store, writes, 1)
        first, second = store.create_run().run_id, store.create_run().run_id
        stale = store.create_run().run_id
        backend.commit_batch([writes[0]._replace(run_id=stale)])
        backend.commit_batch([writes[1]._replace(run_id=stale)])
        for start in range(0, 40, 5):
            part = writes[start : start + 5]
            batch = [
                *[w._replace(run_id=first) for w in part],
                *[w._replace(run_id=second) for w in part],
            ]
            if start == 0:
                # A run whose head is past these steps' guards: refused, nothing written.
                batch.insert(3, writes[0]._replace(run_id=stale))
                batch.insert(6, writes[1]._replace(run_id=stale))
            outcomes = backend.commit_batch(batch)
            for write, outcome in zip(batch, outcomes, strict=True):
                assert isinstance(outcome, Refused if write.run_id == stale else Committed)
        for run_id in (first, second):
            assert rows(url, run_id) == rows(url, one)
            assert head(url, run_id) == head(url, one)
        assert head(url, stale)[0] == writes[1].step


@pytest.mark.postgres
@pytest.mark.parametrize("name", ["commit_chain", "commit_chain_plain"])
def test_commit_chain_is_short_enough_to_stay_prepared(name: str) -> None:
    assert len(load_queries("postgres")[name]) < PSYCOPG_PREPARE_LIMIT
