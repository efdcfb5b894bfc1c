"""Two writers of one run never both win: every operation's effect is kept exactly once.

Writers that read the same head and commit the same state as the next step used to both
succeed (the second commit's checksum matched, so the store took it for a retry of its
own): two pops returned one item twice, two identical appends kept one. Each commit now
stores a write token with its step; only the writer's own retry matches it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import agentckpt
from agentckpt import OutcomeUnknownError, StaleHeadError, Store
from tests.contract.racer import race
from tests.contract.test_failures import _lose_first_ack

ROOT = Path(__file__).resolve().parents[2]
# The writers import the same agentckpt as this test.
SRC = Path(agentckpt.__file__).resolve().parents[1]
WRITERS = 2
ROUNDS = 40  # operations per writer; each round is a fresh chance to collide


def _start(store: Any, items: list[Any]) -> Any:
    run = store.create_run()
    store.commit(run.run_id, {"items": items})
    return run


def _threads(stores: list[Any], run_id: Any, op: str, count: int) -> list[list[Any]]:
    results: list[list[Any]] = [[] for _ in stores]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def work(n: int) -> None:
        try:
            barrier.wait()
            results[n] = race(stores[n], str(run_id), op, count)
        except BaseException as exc:  # reported below, with the thread's error
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_identical_appends_in_threads_are_each_kept(make_store: Any) -> None:
    stores = [make_store() for _ in range(WRITERS)]
    run = _start(stores[0], [])
    done = _threads(stores, run.run_id, "append", ROUNDS)
    assert [len(d) for d in done] == [ROUNDS] * WRITERS
    assert stores[0].latest(run.run_id).state["items"] == ["same"] * (ROUNDS * WRITERS)


def test_pops_in_threads_return_each_item_once(make_store: Any) -> None:
    stores = [make_store() for _ in range(WRITERS)]
    items = list(range(ROUNDS * WRITERS))
    run = _start(stores[0], items)
    done = _threads(stores, run.run_id, "pop", 0)
    popped = sorted(x for d in done for x in d)
    assert popped == items  # none twice, none lost
    assert stores[0].latest(run.run_id).state["items"] == []


@pytest.mark.parametrize("op", ["append", "pop"])
def test_processes_racing_keep_every_effect_once(url: str, op: str) -> None:
    store = Store.connect(url)
    items: list[Any] = [] if op == "append" else list(range(ROUNDS * WRITERS))
    run = _start(store, items)
    count = ROUNDS if op == "append" else 0
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests/contract/racer.py"),
                url,
                str(run.run_id),
                op,
                str(count),
            ],
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env={"PYTHONPATH": f"{SRC}:{ROOT}", "PATH": "/usr/bin:/bin"},
        )
        for _ in range(WRITERS)
    ]
    done = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        done.append(json.loads(out))
    final = store.latest(run.run_id).state["items"]
    store.close()
    if op == "append":
        assert [len(d) for d in done] == [ROUNDS] * WRITERS
        assert final == ["same"] * (ROUNDS * WRITERS)
    else:
        assert sorted(x for d in done for x in d) == items
        assert final == []


def test_another_writers_same_state_is_not_this_writers_step(make_store: Any) -> None:
    first, second = make_store(), make_store()
    run = _start(first, [])
    second.latest(run.run_id)
    second.commit(run.run_id, {"items": ["warm"]})  # both now hold step 2 as their head
    first.resume(run.run_id)
    first.commit(run.run_id, {"items": ["warm", "x"]})
    with pytest.raises(StaleHeadError, match="another writer committed step 3"):
        second.commit(run.run_id, {"items": ["warm", "x"]})
    # The loser re-reads and its own operation lands on top.
    second.resume(run.run_id)
    assert second.commit(run.run_id, {"items": ["warm", "x", "x"]}).step == 4


def test_unknown_outcome_then_another_writer_same_state(
    make_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry after OutcomeUnknownError is this writer's commit only if the step carries
    its token: here the lost attempt did not land and another writer wrote the same."""
    mine, other = make_store(), make_store()
    run = _start(mine, ["a"])
    other.latest(run.run_id)
    backend = getattr(mine, "inner", mine).backend
    real = backend.commit_batch

    def refuse_and_lose(writes: Any) -> Any:
        # The other writer lands first (in a thread: an async store runs its own loop)
        # and this writer's attempt is lost before it is sent; the caller cannot tell.
        monkeypatch.setattr(backend, "commit_batch", real)
        other_commit = threading.Thread(
            target=other.commit, args=(run.run_id, {"items": ["a", "b"]})
        )
        other_commit.start()
        other_commit.join()
        raise OutcomeUnknownError("test: the answer was lost")

    if hasattr(mine, "inner"):

        async def lost(writes: Any) -> Any:
            return refuse_and_lose(writes)

        monkeypatch.setattr(backend, "commit_batch", lost)
    else:
        monkeypatch.setattr(backend, "commit_batch", refuse_and_lose)
    with pytest.raises(OutcomeUnknownError):
        mine.commit(run.run_id, {"items": ["a", "b"]})
    assert other.latest(run.run_id).step == 2
    with pytest.raises(StaleHeadError):
        mine.commit(run.run_id, {"items": ["a", "b"]})
    assert mine.latest(run.run_id).step == 2
    mine.resume(run.run_id)
    assert mine.commit(run.run_id, {"items": ["a", "b", "b"]}).step == 3


def test_unknown_outcome_that_landed_is_still_confirmed(
    make_store: Any, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    run = _start(store, ["a"])
    _lose_first_ack(store, monkeypatch)
    with pytest.raises(OutcomeUnknownError):
        store.commit(run.run_id, {"items": ["a", "b"]})
    assert store.commit(run.run_id, {"items": ["a", "b"]}).step == 2
    assert store.commit(run.run_id, {"items": ["a", "b", "c"]}).step == 3
