"""The store's contract, run on SQLite and PostgreSQL, through the sync and the async API.

Every test gets a fresh database (``store``/``make_store``/``url`` from conftest). Raw SQL
is only used to set up situations the API cannot produce (a lease epoch, a clock in the
future) and to check what is really stored.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentckpt import (
    AsyncStore,
    ConflictError,
    FencedError,
    RunNotFoundError,
    SnapshotPolicy,
    StaleHeadError,
    StepConflictError,
    StepInfo,
    StepNotFoundError,
)
from agentckpt._backends.factory import parse_url
from tests.support.dbsql import run_sql

KEEP_ALL = SnapshotPolicy(interval=5, prune=False)
PRUNING = SnapshotPolicy(interval=5, prune=True)
SYSTEM = "You are a careful planner. " * 20  # makes a one-message delta smaller than the state


def dump(value: Any) -> str:
    """Text that differs whenever two JSON values differ (key order, -0.0, 1 vs 1.0)."""
    return json.dumps(value)


def conversation(n: int) -> dict[str, Any]:
    """A conversation state after ``n`` messages."""
    return {
        "system": SYSTEM,
        "messages": [{"role": "user", "content": f"message {i}"} for i in range(1, n + 1)],
    }


def step_rows(url: str, run_id: uuid.UUID) -> list[tuple[Any, ...]]:
    """The stored step rows of a run, as the database has them."""
    return run_sql(
        url,
        "SELECT step, kind, is_open, write_version, checksum FROM steps "
        "WHERE run_id = ? ORDER BY step",
        str(run_id),
    )


# -- runs ------------------------------------------------------------------------------


def test_create_get_and_list_runs(store: Any) -> None:
    a = store.create_run(agent_id="planner", kind="conversation")
    b = store.create_run(agent_id="planner")
    c = store.create_run(agent_id="coder", kind="conversation")
    store.set_status(b.run_id, "completed")

    got = store.get_run(a.run_id)
    assert got.run_id == a.run_id
    assert (got.agent_id, got.kind, got.status) == ("planner", "conversation", "active")
    assert got.head_step is None
    assert got.snapshot_step is None
    assert got.parent_run_id is None
    assert got.lease_epoch == 0
    assert store.get_run(str(a.run_id)).run_id == a.run_id  # text ids are accepted

    assert {r.run_id for r in store.list_runs()} == {a.run_id, b.run_id, c.run_id}
    assert {r.run_id for r in store.list_runs(agent_id="planner")} == {a.run_id, b.run_id}
    assert {r.run_id for r in store.list_runs(kind="conversation")} == {a.run_id, c.run_id}
    assert {r.run_id for r in store.list_runs(status="completed")} == {b.run_id}
    assert {r.run_id for r in store.list_runs(status="active")} == {a.run_id, c.run_id}
    both = store.list_runs(agent_id="planner", kind="conversation")
    assert [r.run_id for r in both] == [a.run_id]
    assert store.list_runs(agent_id="nobody") == []
    assert len(store.list_runs(limit=2)) == 2
    assert store.get_run(b.run_id).error is None

    store.set_status(c.run_id, "failed", error="tool crashed")
    assert (store.get_run(c.run_id).status, store.get_run(c.run_id).error) == (
        "failed",
        "tool crashed",
    )

    missing = uuid.uuid4()
    with pytest.raises(RunNotFoundError):
        store.get_run(missing)
    with pytest.raises(RunNotFoundError):
        store.latest(missing)
    with pytest.raises(RunNotFoundError):
        store.steps(missing)
    with pytest.raises(RunNotFoundError):
        store.commit(missing, {"a": 1})
    with pytest.raises(RunNotFoundError):
        store.set_status(missing, "failed")


def test_list_idle_runs(store: Any, url: str) -> None:
    old = store.create_run()
    new = store.create_run()
    assert store.list_runs(idle_seconds=3600) == []
    past = "2000-01-01T00:00:00.000"
    if parse_url(url).dialect == "postgresql":
        past = "2000-01-01 00:00:00+00"
    run_sql(url, "UPDATE runs SET updated_at = ? WHERE run_id = ?", past, str(old.run_id))
    assert [r.run_id for r in store.list_runs(idle_seconds=3600)] == [old.run_id]
    assert [r.run_id for r in store.list_runs()] == [new.run_id, old.run_id]  # newest first
    store.commit(old.run_id, {"v": 1})  # a commit is activity
    assert store.list_runs(idle_seconds=3600) == []


def test_create_run_with_an_existing_id(store: Any) -> None:
    run = store.create_run(agent_id="a", config={"k": 1})
    store.commit(run.run_id, {"v": 1})
    with pytest.raises(StepConflictError):
        store.create_run(run.run_id, agent_id="b")
    again = store.create_run(run.run_id, agent_id="b", config={"k": 2}, exist_ok=True)
    assert again.agent_id == "a"
    assert again.config == {"k": 1}
    assert again.head_step == 1


def test_config_round_trips_exactly(store: Any) -> None:
    config = {
        "zeta": {"b": 1, "a": 1.0, "c": True},
        "model": "gpt\x00nul",
        "tools": [{"name": "search", "schema": {"z": None, "y": -0.0}}],
        "alpha": 2**70,
    }
    run = store.create_run(config=config)
    assert dump(run.config) == dump(config)
    assert dump(store.get_run(run.run_id).config) == dump(config)
    (listed,) = store.list_runs()
    assert dump(listed.config) == dump(config)


def test_metadata_merges_top_level_keys(store: Any) -> None:
    run = store.create_run(metadata={"user": "u1", "usage": {"tokens": 10, "cost": 1}})
    assert store.get_run(run.run_id).metadata == {"user": "u1", "usage": {"tokens": 10, "cost": 1}}
    store.commit(run.run_id, {"v": 1}, metadata={"usage": {"tokens": 25}, "model": "m"})
    assert store.get_run(run.run_id).metadata == {
        "user": "u1",
        "usage": {"tokens": 25},  # a top-level key is replaced, not merged into
        "model": "m",
    }
    store.commit(run.run_id, {"v": 2})  # no metadata: unchanged
    store.commit(run.run_id, {"v": 3}, metadata={"user": None})
    assert store.get_run(run.run_id).metadata == {
        "user": None,
        "usage": {"tokens": 25},
        "model": "m",
    }


# -- commit, latest, state_at, steps ---------------------------------------------------


def test_commit_latest_state_at_and_steps(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    assert store.latest(run.run_id) is None
    assert store.steps(run.run_id) == []
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, 1)

    infos = [store.commit(run.run_id, conversation(n)) for n in range(1, 8)]
    assert [i.step for i in infos] == list(range(1, 8))
    assert [i.parent_step for i in infos] == [None, 1, 2, 3, 4, 5, 6]
    assert all(i.run_id == run.run_id and not i.is_open for i in infos)

    latest = store.latest(run.run_id)
    assert latest.step == 7
    assert latest.run_id == run.run_id
    assert dump(latest.state) == dump(conversation(7))
    assert latest.info == store.steps(run.run_id)[-1]
    for n in range(1, 8):
        at = store.state_at(run.run_id, n)
        assert at.step == n
        assert dump(at.state) == dump(conversation(n))
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, 8)
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, 0)

    listed = store.steps(run.run_id)
    assert listed == infos  # what commit returned is what is stored
    assert store.get_run(run.run_id).head_step == 7


def test_step_numbers_default_and_explicit(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    assert store.commit(run.run_id, {"n": 1}).step == 1
    assert store.commit(run.run_id, {"n": 2}).step == 2
    gap = store.commit(run.run_id, {"n": 10}, step=10)
    assert (gap.step, gap.parent_step) == (10, 2)
    assert store.commit(run.run_id, {"n": 11}).step == 11
    assert store.commit(run.run_id, {"n": 20}, step=20).step == 20
    assert [i.step for i in store.steps(run.run_id)] == [1, 2, 10, 11, 20]
    assert [i.parent_step for i in store.steps(run.run_id)] == [None, 1, 2, 10, 11]
    for n in (1, 2, 10, 11, 20):
        assert store.state_at(run.run_id, n).state == {"n": n}
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, 5)  # a gap is not a step

    other = store.create_run()
    assert store.commit(other.run_id, {"n": 7}, step=7).step == 7
    assert store.latest(other.run_id).step == 7
    assert store.commit(other.run_id, {"n": 8}).step == 8


def test_snapshot_every_interval_steps_and_deltas_between(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    for n in range(1, 23):
        store.commit(run.run_id, conversation(n))
    kinds = {i.step: i.kind for i in store.steps(run.run_id)}
    snapshots = sorted(s for s, k in kinds.items() if k == "snapshot")
    assert snapshots == [1, 6, 11, 16, 21]
    assert all(k == "delta" for s, k in kinds.items() if s not in snapshots)
    assert store.get_run(run.run_id).snapshot_step == 21


def test_append_delta_is_small(make_store: Any) -> None:
    store = make_store(policy=SnapshotPolicy(interval=1000, prune=False))
    run = store.create_run()
    sizes = {}
    for n in range(1, 151):
        info = store.commit(run.run_id, conversation(n))
        if n in (2, 50, 150):
            assert info.kind == "delta"
            sizes[n] = info.raw_bytes
    # Only the digits of "message 2", "message 50", "message 150" differ.
    assert sizes[2] + 1 == sizes[50] == sizes[150] - 1
    assert sizes[150] < 100
    steps = store.steps(run.run_id)
    assert steps[-1].state_bytes > 50 * steps[-1].raw_bytes
    first = steps[0]  # a snapshot, and the repetitive system prompt compresses well
    assert (first.kind, first.codec) == ("snapshot", "json+zstd")
    assert first.stored_bytes < first.raw_bytes == first.state_bytes
    assert dump(store.latest(run.run_id).state) == dump(conversation(150))


def test_a_list_nested_in_a_member_grows_and_is_edited_in_place(make_store: Any) -> None:
    # LangGraph's layout: the messages two levels down, in a member large enough that a
    # change is hashed from where the last one ended. The caller mutates the message
    # dicts it handed over before; every step must read back as it was committed.
    store = make_store(policy=SnapshotPolicy(interval=7, prune=False))
    run = store.create_run()
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"message {i} " * 40, "n": i} for i in range(60)
    ]
    committed = []
    for step in range(1, 41):
        messages.append({"role": "assistant", "content": f"reply {step}", "n": step})
        if step % 5 == 0:
            messages[step]["n"] = float(messages[step]["n"])  # == holds, the state differs
        if step % 7 == 0:
            messages[-2]["content"] += " edited"
        if step % 11 == 0:
            messages[3] = {"n": messages[3]["n"], **messages[3]}  # the same keys reordered
        state = {"id": f"c{step}", "values": {"messages": messages, "steps": 25 - step % 3}}
        store.commit(run.run_id, state)
        committed.append(dump(state))
    fresh = make_store()
    assert dump(fresh.latest(run.run_id).state) == committed[-1]
    for step, expected in enumerate(committed, start=1):
        assert dump(fresh.state_at(run.run_id, step).state) == expected


@pytest.mark.parametrize(
    "policy", [PRUNING, SnapshotPolicy(interval=5, chain_share=0)], ids=["stretched", "fixed"]
)
def test_prune_keeps_rows_bounded(make_store: Any, url: str, policy: SnapshotPolicy) -> None:
    store = make_store(policy=policy)
    run = store.create_run()
    # The fixed cadence keeps at most interval rows; a state that grows by less than
    # chain_share of itself over an interval keeps at most interval * stretch.
    bound = policy.interval if policy.chain_share == 0 else policy.interval * policy.stretch
    for n in range(1, 101):
        store.commit(run.run_id, conversation(n))
        infos = store.steps(run.run_id)
        kept = [i.step for i in infos]
        assert len(kept) <= bound
        assert kept == list(range(kept[0], n + 1))  # the newest steps, no holes
        assert infos[0].kind == "snapshot"
        assert [i.kind for i in infos[1:]] == ["delta"] * (len(infos) - 1)
        if n % 10 == 0:
            assert kept[0] == store.get_run(run.run_id).snapshot_step
    last = store.get_run(run.run_id).snapshot_step
    # 5 steps of one short message each are far less than a quarter of the state.
    assert last == 96 if policy.chain_share == 0 else last < 96
    assert [i.step for i in store.steps(run.run_id)] == list(range(last, 101))
    assert len(step_rows(url, run.run_id)) == 101 - last
    for n in range(last, 101):
        assert dump(store.state_at(run.run_id, n).state) == dump(conversation(n))
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, last - 1)
    assert dump(store.latest(run.run_id).state) == dump(conversation(100))


def test_keep_all_and_explicit_prune(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    for n in range(1, 24):
        store.commit(run.run_id, conversation(n))
    assert [i.step for i in store.steps(run.run_id)] == list(range(1, 24))
    for n in range(1, 24):
        assert dump(store.state_at(run.run_id, n).state) == dump(conversation(n))

    assert store.prune(run.run_id) == 20  # everything before the snapshot at 21
    assert [i.step for i in store.steps(run.run_id)] == [21, 22, 23]
    assert store.prune(run.run_id) == 0
    for n in (21, 22, 23):
        assert dump(store.state_at(run.run_id, n).state) == dump(conversation(n))
    with pytest.raises(StepNotFoundError):
        store.state_at(run.run_id, 20)
    assert store.commit(run.run_id, conversation(24)).step == 24
    assert dump(store.latest(run.run_id).state) == dump(conversation(24))

    empty = store.create_run()
    assert store.prune(empty.run_id) == 0
    with pytest.raises(RunNotFoundError):
        store.prune(uuid.uuid4())


# -- retries and conflicts -------------------------------------------------------------


def test_idempotent_retry(make_store: Any, url: str) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    first = store.commit(run.run_id, {"messages": ["a"]})
    second = store.commit(run.run_id, {"messages": ["a", "b"]})
    rows = step_rows(url, run.run_id)

    assert store.commit(run.run_id, {"messages": ["a", "b"]}, step=2) == second
    assert store.commit(run.run_id, {"messages": ["a"]}, step=1) == first
    assert step_rows(url, run.run_id) == rows  # no new row, write_version unchanged
    assert [i.write_version for i in store.steps(run.run_id)] == [1, 1]
    assert store.latest(run.run_id).step == 2
    assert store.commit(run.run_id, {"messages": ["a", "b", "c"]}).step == 3


def test_retry_of_the_head_under_pruning(store: Any, url: str) -> None:
    run = store.create_run()
    for n in range(1, 4):
        store.commit(run.run_id, {"n": n})  # tiny states: each step is a pruning snapshot
    head = store.commit(run.run_id, {"n": 4})
    rows = step_rows(url, run.run_id)
    assert [r[0] for r in rows] == [4]
    assert store.commit(run.run_id, {"n": 4}, step=4) == head
    assert step_rows(url, run.run_id) == rows
    with pytest.raises(StepConflictError):
        store.commit(run.run_id, {"n": 5}, step=4)
    with pytest.raises(ConflictError):
        store.commit(run.run_id, {"n": 3}, step=3)  # pruned: cannot be checked, never rewritten
    assert step_rows(url, run.run_id) == rows


def test_same_step_other_state_conflicts(make_store: Any, url: str) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, {"messages": ["a"]})
    store.commit(run.run_id, {"messages": ["a", "b"]})
    rows = step_rows(url, run.run_id)
    steps = store.steps(run.run_id)

    with pytest.raises(StepConflictError, match="step 2"):
        store.commit(run.run_id, {"messages": ["a", "X"]}, step=2)
    with pytest.raises(StepConflictError, match="step 1"):
        store.commit(run.run_id, {"messages": []}, step=1)
    assert step_rows(url, run.run_id) == rows
    assert store.steps(run.run_id) == steps
    assert store.latest(run.run_id).state == {"messages": ["a", "b"]}


def test_stale_writer_is_refused(make_store: Any, url: str) -> None:
    first = make_store()
    second = make_store()
    run = first.create_run()
    first.commit(run.run_id, {"v": 1})
    first.commit(run.run_id, {"v": 2})
    assert second.commit(run.run_id, {"v": 3, "by": "second"}).step == 3
    rows = step_rows(url, run.run_id)
    steps = second.steps(run.run_id)

    with pytest.raises(StaleHeadError):
        first.commit(run.run_id, {"v": 3, "by": "first"})  # first still thinks head is 2
    assert step_rows(url, run.run_id) == rows
    assert first.steps(run.run_id) == steps
    assert first.latest(run.run_id).state == {"v": 3, "by": "second"}

    # The refusal made the first writer re-read: its next commit follows step 3.
    assert first.commit(run.run_id, {"v": 4}).step == 4
    assert second.latest(run.run_id).state == {"v": 4}


def test_expected_head(store: Any, url: str) -> None:
    run = store.create_run()
    with pytest.raises(StaleHeadError):
        store.commit(run.run_id, {"v": 1}, expected_head=0)
    assert store.commit(run.run_id, {"v": 1}, expected_head=None).step == 1
    assert store.commit(run.run_id, {"v": 2}, expected_head=1).step == 2
    rows = step_rows(url, run.run_id)
    with pytest.raises(StaleHeadError, match="expected head step 1"):
        store.commit(run.run_id, {"v": 3}, expected_head=1)
    with pytest.raises(StaleHeadError):
        store.commit(run.run_id, {"v": 3}, expected_head=None)
    assert step_rows(url, run.run_id) == rows
    assert store.commit(run.run_id, {"v": 3}, expected_head=2).step == 3


def test_open_head(make_store: Any, url: str) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    store.commit(run.run_id, conversation(1))
    versions = []
    for n in (2, 3, 4):
        info = store.commit(run.run_id, conversation(n), step=2, keep_open=True)
        assert (info.step, info.is_open) == (2, True)
        versions.append(info.write_version)
        assert dump(store.latest(run.run_id).state) == dump(conversation(n))
    assert versions == [1, 2, 3]
    assert store.get_run(run.run_id).head_open is True
    assert [(i.step, i.is_open, i.write_version) for i in store.steps(run.run_id)] == [
        (1, False, 1),
        (2, True, 3),
    ]

    sealed = store.commit(run.run_id, conversation(5), step=2)
    assert (sealed.is_open, sealed.write_version) == (False, 4)
    assert store.get_run(run.run_id).head_open is False
    with pytest.raises(StepConflictError):
        store.commit(run.run_id, conversation(6), step=2)  # sealed now: immutable
    assert store.commit(run.run_id, conversation(5), step=2) == sealed  # idempotent

    store.commit(run.run_id, conversation(6), keep_open=True)
    assert store.steps(run.run_id)[-1].is_open
    nxt = store.commit(run.run_id, conversation(7))  # the next step seals the open one
    assert nxt.step == 4
    assert [(i.step, i.is_open) for i in store.steps(run.run_id)] == [
        (1, False),
        (2, False),
        (3, False),
        (4, False),
    ]
    assert [r[2] for r in step_rows(url, run.run_id)] in ([0, 0, 0, 0], [False] * 4)
    for step, n in ((1, 1), (2, 5), (3, 6), (4, 7)):
        assert dump(store.state_at(run.run_id, step).state) == dump(conversation(n))


def test_open_head_overwritten_by_another_store(make_store: Any, url: str) -> None:
    first = make_store()
    second = make_store()
    run = first.create_run()
    first.commit(run.run_id, conversation(1))
    first.commit(run.run_id, conversation(2), keep_open=True)

    taken = second.commit(run.run_id, conversation(3), step=2, keep_open=True)
    assert taken.write_version == 2
    rows = step_rows(url, run.run_id)
    with pytest.raises(ConflictError) as raised:
        first.commit(run.run_id, conversation(4), step=2, keep_open=True)
    assert isinstance(raised.value, StaleHeadError)
    assert step_rows(url, run.run_id) == rows
    assert dump(first.latest(run.run_id).state) == dump(conversation(3))

    second.commit(run.run_id, conversation(3), step=2)  # sealed by its owner
    with pytest.raises(StepConflictError):
        first.commit(run.run_id, conversation(5), step=2)
    assert dump(second.latest(run.run_id).state) == dump(conversation(3))


def test_fencing_by_lease_epoch(store: Any, url: str) -> None:
    run = store.create_run()
    store.commit(run.run_id, {"v": 1}, epoch=0)
    run_sql(url, "UPDATE runs SET lease_epoch = 3 WHERE run_id = ?", str(run.run_id))
    assert store.get_run(run.run_id).lease_epoch == 3
    rows = step_rows(url, run.run_id)

    with pytest.raises(FencedError, match="epoch 2"):
        store.commit(run.run_id, {"v": 2}, epoch=2)
    with pytest.raises(FencedError):
        store.commit(run.run_id, {"v": 2}, epoch=4)
    assert step_rows(url, run.run_id) == rows
    assert store.latest(run.run_id).state == {"v": 1}
    assert store.commit(run.run_id, {"v": 2}, epoch=3).step == 2
    assert store.commit(run.run_id, {"v": 3}).step == 3  # unfenced writes are not checked


# -- fork and delete -------------------------------------------------------------------


def test_fork(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    source = store.create_run(agent_id="planner", kind="chat", config={"b": 1, "a": 2})
    for n in range(1, 9):
        store.commit(source.run_id, conversation(n))
    before = store.steps(source.run_id)

    fork = store.fork(source.run_id, 3)
    assert fork.run_id != source.run_id
    assert (fork.parent_run_id, fork.parent_step) == (source.run_id, 3)
    assert (fork.agent_id, fork.kind) == ("planner", "chat")
    assert dump(fork.config) == dump({"b": 1, "a": 2})
    assert fork.head_step == 3
    forked = store.latest(fork.run_id)
    assert forked.step == 3
    assert dump(forked.state) == dump(store.state_at(source.run_id, 3).state)

    assert store.commit(fork.run_id, {"diverged": True}).step == 4
    assert store.steps(source.run_id) == before
    assert dump(store.latest(source.run_id).state) == dump(conversation(8))

    new_id = uuid.uuid4()
    head_fork = store.fork(source.run_id, new_run_id=new_id)
    assert (head_fork.run_id, head_fork.parent_step) == (new_id, 8)
    assert dump(store.latest(new_id).state) == dump(conversation(8))

    with pytest.raises(StepNotFoundError):
        store.fork(source.run_id, 99)


def test_fork_of_a_run_without_steps(store: Any) -> None:
    run = store.create_run()
    with pytest.raises(StepNotFoundError):
        store.fork(run.run_id)
    assert [r.run_id for r in store.list_runs()] == [run.run_id]  # no half-made fork
    with pytest.raises(RunNotFoundError):
        store.fork(uuid.uuid4())


def test_delete_run(store: Any, url: str) -> None:
    keep = store.create_run()
    store.commit(keep.run_id, {"keep": True})
    run = store.create_run()
    for n in range(1, 30):
        store.commit(run.run_id, conversation(n))
    assert store.delete_run(run.run_id) is True
    with pytest.raises(RunNotFoundError):
        store.steps(run.run_id)
    with pytest.raises(RunNotFoundError):
        store.latest(run.run_id)
    with pytest.raises(RunNotFoundError):
        store.get_run(run.run_id)
    with pytest.raises(RunNotFoundError):
        store.commit(run.run_id, {"v": 1})
    for table in ("runs", "steps", "blobs", "effects"):
        assert run_sql(url, f"SELECT count(*) FROM {table} WHERE run_id = ?", str(run.run_id)) == [
            (0,)
        ]
    assert store.delete_run(run.run_id) is False
    assert store.latest(keep.run_id).state == {"keep": True}


# -- exact states ----------------------------------------------------------------------


def _mixed_states() -> list[Any]:
    """States that exercise every kind of edit between consecutive commits."""
    states: list[Any] = []
    s: dict[str, Any] = {
        "messages": [{"role": "system", "content": "be brief"}],
        "scratch": {"a": 1, "b": {"c": [1, 2, 3]}, "d": None},
        "n": 0,
    }
    states.append(copy.deepcopy(s))
    for i in range(1, 41):
        s["n"] = i
        s["messages"].append({"role": "user", "content": f"q{i}", "meta": {"i": i}})
        kind = i % 10
        if kind == 1:
            s["scratch"]["b"]["c"].append(i)  # nested list append
        elif kind == 2:
            s["scratch"]["d"] = None if s["scratch"]["d"] else {"x": -0.0}  # null <-> dict
        elif kind == 3:
            s["messages"] = s["messages"][: max(1, len(s["messages"]) - 3)]  # list shrink
        elif kind == 4:
            s["scratch"]["a"] = [s["scratch"]["a"]] if type(s["scratch"]["a"]) is int else i
        elif kind == 5:
            s["scratch"] = dict(reversed(list(s["scratch"].items())))  # key reorder
        elif kind == 6:
            s["scratch"]["b"] = "now a string"  # dict -> str
        elif kind == 7:
            s["scratch"]["b"] = {"c": [1.0, 1, True, None, 2**80]}  # 1 vs 1.0 vs True
        elif kind == 8:
            s.pop("extra", None) if "extra" in s else s.update(extra={"z": 0, "y": ""})
        elif kind == 9:
            s["messages"][0]["content"] = "x" * i
            s["messages"][-1]["meta"] = None
        else:
            s["n"] = float(i)  # int -> float
        states.append(copy.deepcopy(s))
    states.append([1, {"type": "root changed"}])  # the whole document changes type
    states.append({"back": "to a dict"})
    return states


def test_mixed_edits_round_trip_exactly(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    states = _mixed_states()
    for step, state in enumerate(states, start=1):
        store.commit(run.run_id, state)
        assert dump(store.latest(run.run_id).state) == dump(state), step
    assert {i.kind for i in store.steps(run.run_id)} == {"snapshot", "delta"}
    for step, state in enumerate(states, start=1):
        assert dump(store.state_at(run.run_id, step).state) == dump(state), step


def test_mixed_edits_with_pruning(make_store: Any) -> None:
    store = make_store(policy=SnapshotPolicy(interval=3))
    run = store.create_run()
    states = _mixed_states()
    for state in states:
        store.commit(run.run_id, state)
    fresh = make_store()  # no cached head: rebuilds from the database alone
    assert dump(fresh.latest(run.run_id).state) == dump(states[-1])
    for info in fresh.steps(run.run_id):
        assert dump(fresh.state_at(run.run_id, info.step).state) == dump(states[info.step - 1])


def test_timestamps_come_from_the_database(
    make_store: Any, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGTZ", "America/New_York")  # UTC all the same
    store = make_store()
    run = store.create_run()
    assert run.created_at.tzinfo is not None
    assert run.created_at.utcoffset() == timedelta(0)
    info = store.commit(run.run_id, {"v": 1})
    for stamp in (info.created_at, info.updated_at, store.get_run(run.run_id).updated_at):
        assert stamp.tzinfo is not None
        assert stamp.utcoffset() == timedelta(0)
    assert abs(info.created_at - datetime.now(UTC)) < timedelta(minutes=5)
    assert run.created_at <= info.created_at
    assert store.steps(run.run_id)[0].created_at == info.created_at
    (stored,) = run_sql(url, "SELECT created_at FROM steps WHERE run_id = ?", str(run.run_id))
    raw = stored[0]
    if isinstance(raw, str):  # SQLite: UTC text written by SQLite's own clock
        raw = datetime.fromisoformat(raw).replace(tzinfo=UTC)
    assert raw == info.created_at


def test_latest_follows_step_order_not_clocks(make_store: Any, url: str) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    for n in range(1, 4):
        store.commit(run.run_id, {"n": n})
    future = "2999-01-01T00:00:00.000"
    if parse_url(url).dialect == "postgresql":
        future = "2999-01-01 00:00:00+00"
    run_sql(
        url,
        "UPDATE steps SET created_at = ?, updated_at = ? WHERE run_id = ? AND step = 1",
        future,
        future,
        str(run.run_id),
    )
    latest = store.latest(run.run_id)
    assert (latest.step, latest.state) == (3, {"n": 3})
    assert [i.step for i in store.steps(run.run_id)] == [1, 2, 3]
    assert store.steps(run.run_id)[0].created_at.year == 2999
    assert store.commit(run.run_id, {"n": 4}).step == 4


def test_caller_may_mutate_a_loaded_state(store: Any) -> None:
    run = store.create_run()
    store.commit(run.run_id, conversation(1))
    loaded = store.latest(run.run_id)
    loaded.state["messages"].append({"role": "intruder"})
    loaded.state["system"] = "changed"
    assert dump(store.latest(run.run_id).state) == dump(conversation(1))
    store.commit(run.run_id, conversation(2))
    assert dump(store.latest(run.run_id).state) == dump(conversation(2))
    store.commit(run.run_id, loaded.state)  # what the caller made of it, on purpose
    assert dump(store.latest(run.run_id).state) == dump(loaded.state)


def test_caller_mutating_its_state_between_commits(make_store: Any) -> None:
    store = make_store(policy=KEEP_ALL)
    run = store.create_run()
    state: dict[str, Any] = {"messages": [], "tally": {"n": 0}}
    expected = []
    for n in range(1, 13):
        state["messages"].append({"content": f"m{n}"})
        state["tally"]["n"] = n
        if n % 4 == 0:
            state["messages"][0]["content"] = f"edited at {n}"
        store.commit(run.run_id, state)
        expected.append(copy.deepcopy(state))
    for step, want in enumerate(expected, start=1):
        assert dump(store.state_at(run.run_id, step).state) == dump(want)
    fresh_state = store.latest(run.run_id).state
    assert dump(fresh_state) == dump(expected[-1])
    assert fresh_state is not state


def step_of(info: StepInfo) -> int:
    return info.step


async def test_concurrent_commits_on_one_async_store(url: str) -> None:
    async with await AsyncStore.connect(url) as store:
        run = await store.create_run()
        await store.commit(run.run_id, {"v": 0})
        results = await asyncio.gather(
            *(store.commit(run.run_id, {"v": i}) for i in range(1, 6)), return_exceptions=True
        )
        # Commits that overlap refuse all but one with StaleHeadError; ones that ran one
        # after another (the async SQLite store runs a lone run's calls on the loop's
        # thread, so a commit may finish before the next starts) each build on the last.
        # Either way the steps won follow each other and nothing is lost.
        won = sorted((r for r in results if not isinstance(r, BaseException)), key=step_of)
        lost = [r for r in results if isinstance(r, BaseException)]
        assert [w.step for w in won] == list(range(2, 2 + len(won)))
        assert all(isinstance(e, StaleHeadError) for e in lost), lost
        last = won[-1]
        assert [i.step for i in await store.steps(run.run_id)][-1] == last.step
        latest = await store.latest(run.run_id)
        assert latest is not None
        assert latest.step == last.step
        assert latest.state == {"v": results.index(last) + 1}
        assert (await store.commit(run.run_id, {"v": 9})).step == last.step + 1


# -- resume_run ------------------------------------------------------------------------


def _count_reads(store: Any) -> list[str]:
    """The name of every query the store's backend reads from now on."""
    backend = store.backend
    original = backend.read
    names: list[str] = []
    if inspect.iscoroutinefunction(original):

        async def read_async(name: str, params: Any) -> Any:
            names.append(name)
            return await original(name, params)

        backend.read = read_async
    else:

        def read(name: str, params: Any) -> Any:
            names.append(name)
            return original(name, params)

        backend.read = read
    return names


def test_resume_run_reads_the_record_and_the_state_in_one_query(make_store: Any) -> None:
    store = make_store(policy=PRUNING)
    config = {"tools": ["search"] * 50, "model": "m"}
    run = store.create_run(agent_id="planner", config=config, metadata={"user": "u1"})
    reader = make_store(policy=PRUNING)
    reads = _count_reads(reader)
    record, checkpoint = reader.resume_run(run.run_id)
    assert reads == ["resume_run"]
    assert checkpoint is None  # no step yet
    assert record == reader.get_run(run.run_id)
    for n in range(1, 13):  # snapshots at 1, 6, 11 (pruned below): a chain of two rows
        store.commit(run.run_id, conversation(n), keep_open=n == 12)
    assert [i.step for i in store.steps(run.run_id)] == [11, 12]
    del reads[:]
    record, checkpoint = reader.resume_run(str(run.run_id))
    assert reads == ["resume_run"]
    assert record == reader.get_run(run.run_id)
    assert (record.agent_id, record.config, record.metadata) == ("planner", config, {"user": "u1"})
    assert (record.head_step, record.head_open, record.snapshot_step) == (12, True, 11)
    assert checkpoint is not None
    assert (checkpoint.step, checkpoint.info.is_open) == (12, True)
    assert dump(checkpoint.state) == dump(conversation(12))
    assert checkpoint.info == reader.steps(run.run_id)[-1]
    assert reader.resume(run.run_id) == checkpoint
    with pytest.raises(RunNotFoundError):
        reader.resume_run(uuid.uuid4())


def test_resume_run_makes_the_state_the_writers_base_and_hands_out_a_copy(
    make_store: Any,
) -> None:
    first = make_store()
    second = make_store()
    run = first.create_run()
    first.commit(run.run_id, conversation(1))
    second.resume_run(run.run_id)
    second.commit(run.run_id, conversation(2), expected_head=1)
    with pytest.raises(StaleHeadError):
        first.commit(run.run_id, conversation(3), expected_head=1)
    _, checkpoint = first.resume_run(run.run_id)  # the writer (re)starts from the database
    assert checkpoint is not None
    state = checkpoint.state
    state["messages"].append({"role": "user", "content": "message 3"})
    state["system"] = "changed after reading"  # the caller's copy, not the store's base
    info = first.commit(run.run_id, conversation(3), expected_head=2)
    assert info.step == 3
    assert dump(first.latest(run.run_id).state) == dump(conversation(3))
    assert dump(make_store().latest(run.run_id).state) == dump(conversation(3))
