"""The SQLite backend's commit: no savepoint for a lone write, nor for a batch's until one
is needed.

A lone write is its own transaction, so a refusal rolls the transaction back; in a batch
of several, a write refused by its guard has written nothing and the others land; one
refused after its guard (its step found sealed) sends the batch again with a savepoint
a write, so it alone is undone. Either way a refused write leaves nothing written and
is answered with the head as it stands.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from functools import partial

import pytest

from agentckpt import AsyncStore, StepInfo, Store
from agentckpt._backends.factory import parse_url
from agentckpt._backends.sqlite import SqliteBackend
from agentckpt._backends.sqlite_worker import AsyncSqliteBackend
from agentckpt._core import writes
from agentckpt._core.codec import encode
from agentckpt._core.compression import ZSTD
from agentckpt._core.writes import BlobRow, Committed, Refused, StepWrite
from tests.support.writes import step_write


@pytest.fixture
def backend(sqlite_url: str) -> Iterator[SqliteBackend]:
    sqlite = SqliteBackend(parse_url(sqlite_url).location)
    yield sqlite
    sqlite.close()


def new_run(backend: SqliteBackend, sqlite_url: str) -> uuid.UUID:
    with Store.connect(sqlite_url) as store:
        return store.create_run(agent_id="a").run_id


def stored(backend: SqliteBackend, run: uuid.UUID) -> tuple[object, ...]:
    """The run's head, and how many step and blob rows it has."""
    conn = backend._conn
    head = conn.execute(
        "SELECT head_step, head_version, snapshot_step FROM runs WHERE run_id = ?", (str(run),)
    ).fetchone()
    steps = conn.execute("SELECT count(*) FROM steps WHERE run_id = ?", (str(run),)).fetchone()
    blobs = conn.execute("SELECT count(*) FROM blobs WHERE run_id = ?", (str(run),)).fetchone()
    return (tuple(head), steps[0], blobs[0])


def with_blob(write: StepWrite) -> StepWrite:
    return write._replace(blobs=(BlobRow("d" * 64, "json", 2, b"{}"),))


def test_a_lone_write_refused_by_its_guard_writes_nothing(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    run = new_run(backend, sqlite_url)
    before = stored(backend, run)
    stale = with_blob(step_write(run))._replace(expected_version=7)
    [outcome] = backend.commit_batch([stale])
    assert isinstance(outcome, Refused)
    assert outcome.probe is not None
    assert outcome.probe["head_version"] == 0
    assert stored(backend, run) == before
    assert not backend._conn.in_transaction


def test_a_lone_write_refused_after_its_guard_is_rolled_back_whole(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    run = new_run(backend, sqlite_url)
    [first] = backend.commit_batch([step_write(run)])  # step 1, sealed (is_open False)
    assert isinstance(first, Committed)
    before = stored(backend, run)
    # The guard matches (the head is step 1, version 1) but step 1 is sealed: the upsert
    # refuses, after the guard and the blob were written.
    again = with_blob(step_write(run))._replace(
        expected_step=1, expected_version=1, write_version=2
    )
    [outcome] = backend.commit_batch([again])
    assert isinstance(outcome, Refused)
    assert outcome.probe is not None
    assert (outcome.probe["head_step"], outcome.probe["head_version"]) == (1, 1)
    assert stored(backend, run) == before
    assert not backend._conn.in_transaction


def test_a_batch_of_several_undoes_a_refused_write_alone(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    runs = [new_run(backend, sqlite_url) for _ in range(3)]
    before = stored(backend, runs[1])
    writes = [
        with_blob(step_write(runs[0])),
        with_blob(step_write(runs[1]))._replace(expected_version=7),
        with_blob(step_write(runs[2])),
    ]
    outcomes = backend.commit_batch(writes)
    assert isinstance(outcomes[0], Committed)
    assert isinstance(outcomes[1], Refused)
    assert isinstance(outcomes[2], Committed)
    assert stored(backend, runs[1]) == before
    for run in (runs[0], runs[2]):
        assert stored(backend, run) == ((1, 1, 1), 1, 1)
    assert not backend._conn.in_transaction


def test_a_batch_undoes_a_write_refused_after_its_guard_alone(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    runs = [new_run(backend, sqlite_url) for _ in range(3)]
    [first] = backend.commit_batch([step_write(runs[1])])  # step 1 of runs[1], sealed
    assert isinstance(first, Committed)
    before = stored(backend, runs[1])
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    writes = [
        with_blob(step_write(runs[0])),
        # Its guard matches (head step 1, version 1) but step 1 is sealed: the upsert
        # refuses after the guard and the blob were written.
        with_blob(step_write(runs[1]))._replace(
            expected_step=1, expected_version=1, write_version=2
        ),
        with_blob(step_write(runs[2])),
    ]
    outcomes = backend.commit_batch(writes)
    backend._conn.set_trace_callback(None)
    assert isinstance(outcomes[0], Committed)
    assert isinstance(outcomes[1], Refused)
    assert outcomes[1].probe is not None
    assert (outcomes[1].probe["head_step"], outcomes[1].probe["head_version"]) == (1, 1)
    assert isinstance(outcomes[2], Committed)
    assert stored(backend, runs[1]) == before
    for run in (runs[0], runs[2]):
        assert stored(backend, run) == ((1, 1, 1), 1, 1)
    assert not backend._conn.in_transaction
    # Sent twice: first without savepoints (rolled back at the sealed step), then with.
    assert statements.count("BEGIN IMMEDIATE") == 2
    assert statements.count("ROLLBACK") == 1
    assert statements.count("SAVEPOINT step_write") == 3


def test_a_batch_without_refusals_takes_no_savepoint(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    runs = [new_run(backend, sqlite_url) for _ in range(3)]
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    outcomes = backend.commit_batch([step_write(run) for run in runs])
    backend._conn.set_trace_callback(None)
    assert all(isinstance(outcome, Committed) for outcome in outcomes)
    assert not [s for s in statements if "SAVEPOINT" in s or "RELEASE" in s]
    assert statements.count("COMMIT") == 1


def test_a_lone_write_that_fails_rolls_back_and_raises(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    run = new_run(backend, sqlite_url)
    before = stored(backend, run)
    with pytest.raises(Exception, match="CHECK constraint failed"):
        backend.commit_batch([with_blob(step_write(run, kind="bogus"))])
    assert stored(backend, run) == before
    assert not backend._conn.in_transaction


def test_the_worker_thread_runs_calls_in_order_and_answers_each(sqlite_url: str) -> None:
    async def main() -> None:
        worker = AsyncSqliteBackend(SqliteBackend(parse_url(sqlite_url).location))
        order: list[int] = []

        def record(i: int) -> int:
            order.append(i)
            return i * 10

        def fail() -> None:
            raise ValueError("from the thread")

        answers = await asyncio.gather(*(worker._call(partial(record, i)) for i in range(50)))
        assert answers == [i * 10 for i in range(50)]
        assert order == list(range(50))
        with pytest.raises(ValueError, match="from the thread"):
            await worker._call(fail)
        assert await worker.read("applied_migrations", {})
        await worker.close()
        with pytest.raises(RuntimeError, match="after shutdown"):
            await worker._call(partial(record, 99))
        assert 99 not in order

    asyncio.run(main())


def test_an_async_commit_packs_its_payload_on_the_worker_thread(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zstd runs beside the event loop, and the row holds what pack() gives on any thread."""
    packed_on: list[str] = []
    real_pack = writes.pack

    def recording_pack(raw: bytes) -> tuple[str, bytes]:
        packed_on.append(threading.current_thread().name)
        return real_pack(raw)

    real_pack_many = writes.pack_many

    def recording_pack_many(raws: list[bytes]) -> list[tuple[str, bytes]]:
        packed_on.append(threading.current_thread().name)
        return real_pack_many(raws)

    monkeypatch.setattr(writes, "pack", recording_pack)
    monkeypatch.setattr(writes, "pack_many", recording_pack_many)
    state = {"log": ["word " * 40 for _ in range(20)]}

    async def main() -> StepInfo:
        async with await AsyncStore.connect(sqlite_url) as store:
            run = await store.create_run(agent_id="a")
            info = await store.commit(run.run_id, state)
            assert (await store.latest(run.run_id)).state == state  # type: ignore[union-attr]
            return info

    info = asyncio.run(main())
    assert packed_on == ["agentckpt-sqlite"]
    codec, payload = real_pack(encode(state))
    assert (info.codec, info.stored_bytes) == (codec, len(payload)) == (ZSTD, len(payload))
    backend = SqliteBackend(parse_url(sqlite_url).location)
    try:
        row = backend._conn.execute(
            "SELECT codec, payload FROM steps WHERE run_id = ?", (str(info.run_id),)
        ).fetchone()
    finally:
        backend.close()
    assert (row[0], bytes(row[1])) == (codec, payload)


def step_times(backend: SqliteBackend, run: uuid.UUID, step: int) -> tuple[str, str]:
    row = backend._conn.execute(
        "SELECT created_at, updated_at FROM steps WHERE run_id = ? AND step = ?", (str(run), step)
    ).fetchone()
    return row[0], row[1]


def test_a_commit_answers_the_timestamps_it_stored_in_sqlite_s_format(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    """The bound time is the text ``strftime('%Y-%m-%dT%H:%M:%f', 'now')`` writes, read
    inside the transaction, and the answer is that text's datetime, as a read gives it."""
    run = new_run(backend, sqlite_url)
    before = backend._conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%f', 'now')").fetchone()[0]
    [outcome] = backend.commit_batch([step_write(run)])
    after = backend._conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%f', 'now')").fetchone()[0]
    assert isinstance(outcome, Committed)
    created, updated = step_times(backend, run, 1)
    assert before <= created == updated <= after
    assert len(created) == len(before)
    [row] = backend.read("list_steps", {"run_id": run})
    assert (outcome.created_at, outcome.updated_at) == (row["created_at"], row["updated_at"])
    assert outcome.created_at.tzinfo is not None
    heartbeat = backend._conn.execute(
        "SELECT heartbeat_at, updated_at FROM runs WHERE run_id = ?", (str(run),)
    ).fetchone()
    assert tuple(heartbeat) == (created, created)


def test_a_rewritten_open_step_keeps_its_created_at(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    run = new_run(backend, sqlite_url)
    [first] = backend.commit_batch([step_write(run)._replace(is_open=True)])
    assert isinstance(first, Committed)
    created, _ = step_times(backend, run, 1)
    # Later than the first commit by a millisecond at least, so the two texts differ.
    threading.Event().wait(0.005)
    rewrite = step_write(run, payload=b'{"a":1}')._replace(
        expected_step=1, expected_version=1, write_version=2
    )
    [second] = backend.commit_batch([rewrite])
    assert isinstance(second, Committed)
    assert step_times(backend, run, 1)[0] == created
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    [row] = backend.read("list_steps", {"run_id": run})
    assert (second.created_at, second.updated_at) == (row["created_at"], row["updated_at"])


def test_a_step_row_left_past_the_head_goes_to_the_upsert(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    """A new step's insert that finds the row there already (open: rewritten, keeping its
    created_at; sealed: refused) is decided by the upsert, as before the insert."""
    run = new_run(backend, sqlite_url)
    [first] = backend.commit_batch([step_write(run)._replace(is_open=True)])
    assert isinstance(first, Committed)
    created, _ = step_times(backend, run, 1)
    # The head moves back (as a rewind does) and leaves the open row of step 1 behind.
    backend._conn.execute("UPDATE runs SET head_step = NULL WHERE run_id = ?", (str(run),))
    threading.Event().wait(0.005)
    moved = step_write(run, payload=b'{"b":2}')._replace(expected_version=1, write_version=2)
    [again] = backend.commit_batch([moved])
    assert isinstance(again, Committed)
    assert again.created_at == first.created_at
    assert step_times(backend, run, 1)[0] == created
    backend._conn.execute("UPDATE steps SET is_open = 0 WHERE run_id = ?", (str(run),))
    backend._conn.execute("UPDATE runs SET head_step = NULL WHERE run_id = ?", (str(run),))
    sealed = step_write(run, payload=b'{"c":3}')._replace(expected_version=2, write_version=3)
    [refused] = backend.commit_batch([sealed])
    assert isinstance(refused, Refused)
    assert not backend._conn.in_transaction


def test_a_batch_rewrites_open_steps_and_refuses_a_sealed_one_alone(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    """Rewrites of open heads keep their created_at; a step row found sealed (the guard
    matched) sends the batch to the savepoints, where that write alone is refused."""
    runs = [new_run(backend, sqlite_url) for _ in range(3)]
    firsts = backend.commit_batch(
        [step_write(run)._replace(is_open=run != runs[1]) for run in runs]
    )
    assert all(isinstance(first, Committed) for first in firsts)
    threading.Event().wait(0.005)
    rewrites = [
        step_write(run, payload=b'{"r":1}')._replace(
            expected_step=1, expected_version=1, write_version=2, metadata='{"m":1}'
        )
        for run in runs
    ]
    before = stored(backend, runs[1])
    outcomes = backend.commit_batch(rewrites)
    assert [type(outcome) for outcome in outcomes] == [Committed, Refused, Committed]
    assert stored(backend, runs[1]) == before
    for run, first, outcome in zip(runs, firsts, outcomes, strict=True):
        if run == runs[1]:
            continue
        assert isinstance(outcome, Committed)
        assert isinstance(first, Committed)
        assert outcome.created_at == first.created_at
        assert outcome.updated_at > first.updated_at
        [row] = backend.read("list_steps", {"run_id": run})
        assert (row["created_at"], row["updated_at"]) == (outcome.created_at, outcome.updated_at)
        assert stored(backend, run) == ((1, 2, 1), 1, 0)
        metadata = backend._conn.execute(
            "SELECT metadata FROM runs WHERE run_id = ?", (str(run),)
        ).fetchone()[0]
        assert '"m":1' in metadata
    sealed_metadata = backend._conn.execute(
        "SELECT metadata FROM runs WHERE run_id = ?", (str(runs[1]),)
    ).fetchone()[0]
    assert '"m"' not in sealed_metadata
    assert not backend._conn.in_transaction


def test_a_batch_with_a_step_row_left_past_the_head_upserts_it(
    backend: SqliteBackend, sqlite_url: str
) -> None:
    """A new step whose row is there already (left past the head), in a batch: upserted
    (open: rewritten), the batch's other writes committed."""
    runs = [new_run(backend, sqlite_url) for _ in range(3)]
    [first] = backend.commit_batch([step_write(runs[0])._replace(is_open=True)])
    assert isinstance(first, Committed)
    backend._conn.execute("UPDATE runs SET head_step = NULL WHERE run_id = ?", (str(runs[0]),))
    writes = [
        step_write(runs[0], payload=b'{"b":2}')._replace(expected_version=1, write_version=2),
        step_write(runs[1]),
        step_write(runs[2]),
    ]
    outcomes = backend.commit_batch(writes)
    assert all(isinstance(outcome, Committed) for outcome in outcomes)
    assert outcomes[0].created_at == first.created_at  # type: ignore[union-attr]
    assert stored(backend, runs[0]) == ((1, 2, 1), 1, 0)
    for run in runs[1:]:
        assert stored(backend, run) == ((1, 1, 1), 1, 0)
    payload = backend._conn.execute(
        "SELECT payload FROM steps WHERE run_id = ?", (str(runs[0]),)
    ).fetchone()[0]
    assert bytes(payload) == b'{"b":2}'
    assert not backend._conn.in_transaction
