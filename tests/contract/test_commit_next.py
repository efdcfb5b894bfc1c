"""The run loop's steady-state commit (``Store._commit_next``) is ``Store.commit``.

It commits the step after the store's cached head, fenced by the lease epoch and
guarded by that head, as ``commit(step=head + 1, expected_head=head, epoch=...)`` does;
a head the cache no longer holds, another writer's step and a stale epoch are refused
(or handled) exactly as that commit refuses them, and nothing is written then.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import Store
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import FencedError, StaleHeadError, StepConflictError
from agentckpt.runs.offload import changed_members, encodings_of

POLICY = SnapshotPolicy(interval=20)


def next_step(store: Store, run_id: Any, step: int, state: dict[str, Any], **kw: Any) -> Any:
    head = store._run_head(run_id, step)
    assert head is not None
    differs = changed_members(state, head.state)
    assert differs is not None
    flagged = [v for v, d in zip(state.values(), differs, strict=True) if d]
    return store._commit_next(
        head,
        run_id,
        state,
        epoch=kw.pop("epoch", 0),
        policy=POLICY,
        changed=differs,
        encoded=kw.pop("encoded", encodings_of(flagged)),
    )


def test_the_next_step_is_what_commit_stores(url: str) -> None:
    with Store.connect(url) as fast, Store.connect(url) as general:
        a, b = fast.create_run(), general.create_run()
        state = {"n": 0, "notes": ["x"], "rec": {"k": 1}, "f": 1.0}
        fast.commit(a.run_id, dict(state), step=0, expected_head=None, epoch=0, policy=POLICY)
        general.commit(b.run_id, dict(state), step=0, expected_head=None, epoch=0, policy=POLICY)
        for n in range(1, 45):
            state = dict(state, n=n, notes=[*state["notes"], f"s{n}"], f=n / 3)
            info = next_step(fast, a.run_id, n - 1, dict(state))
            other = general.commit(
                b.run_id, dict(state), step=n, expected_head=n - 1, epoch=0, policy=POLICY
            )
            assert (info.step, info.kind, info.checksum, info.raw_bytes) == (
                other.step,
                other.kind,
                other.checksum,
                other.raw_bytes,
            )
        with Store.connect(url) as fresh:
            assert fresh.latest(a.run_id).state == state
            assert fresh.latest(a.run_id).step == 44


def test_a_head_the_cache_moved_past_is_the_general_commit(url: str) -> None:
    with Store.connect(url) as store:
        run = store.create_run()
        store.commit(run.run_id, {"v": 0}, step=0, expected_head=None, policy=POLICY)
        old = store._run_head(run.run_id, 0)
        store.commit(run.run_id, {"v": 1}, step=1, expected_head=0, policy=POLICY)
        assert old is not None
        with pytest.raises(StaleHeadError, match="expected head step 0"):
            store._commit_next(
                old, run.run_id, {"v": 2}, epoch=0, policy=POLICY, changed=b"\x01", encoded=None
            )
        assert store.latest(run.run_id).state == {"v": 1}


def test_another_writers_step_is_refused_and_the_head_reread(url: str) -> None:
    with Store.connect(url) as first, Store.connect(url) as other, Store.connect(url) as second:
        run = first.create_run()
        first.commit(run.run_id, {"v": 0}, step=0, expected_head=None, policy=POLICY)
        other.latest(run.run_id)
        other.commit(run.run_id, {"v": 0}, step=0, policy=POLICY)  # a retry: caches head 0
        second.commit(run.run_id, {"v": 1, "by": "second"}, step=1, policy=POLICY)
        # Step 1 was named, so it is "already committed", as commit(step=1) says.
        with pytest.raises(StepConflictError):
            next_step(first, run.run_id, 0, {"v": 1})
        with pytest.raises(StepConflictError):
            other.commit(run.run_id, {"v": 1}, step=1, expected_head=0, epoch=0, policy=POLICY)
        assert first._run_head(run.run_id, 0) is None  # forgotten: the next commit re-reads
        assert first.latest(run.run_id).state == {"v": 1, "by": "second"}


def test_a_stale_epoch_is_fenced(url: str) -> None:
    with Store.connect(url) as store:
        run = store.create_run()
        store.commit(run.run_id, {"v": 0}, step=0, expected_head=None, policy=POLICY)
        with pytest.raises(FencedError):
            next_step(store, run.run_id, 0, {"v": 1}, epoch=7)
        assert store.latest(run.run_id).state == {"v": 0}
        assert [s.step for s in store.steps(run.run_id)] == [0]
