"""Blob garbage collection: unreferenced blobs go, referenced and recent ones stay."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from agentckpt import ConfigurationError
from agentckpt._core.blobs import digest_of
from tests.integration.runs.conftest import Runs
from tests.support.runs import PROMPT

DOC_A = "document A. " * 500
DOC_B = "document B. " * 500


def swap_step(ctx: Any) -> Any:
    """Step 1 holds document A, every later step document B."""
    ctx.state["doc"] = DOC_A if ctx.step == 1 else DOC_B
    ctx.state["n"] = ctx.step
    return ctx.state


def digest_of_ref(ref: dict[str, Any]) -> str:
    return str(ref["$blob"]).removeprefix("sha256:")


def test_a_blob_referenced_only_by_a_kept_older_step_survives(runs: Runs) -> None:
    run = runs.agent_run(initial_state={"prompt": PROMPT}, snapshot_interval=5)
    steps = run.steps(swap_step, max_steps=10)
    with run:
        for info in steps:
            if info.step == 3:
                break
    doc_a = digest_of_ref(runs.check.state_at(run.run_id, 1).state["doc"])
    doc_b = digest_of_ref(runs.check.state_at(run.run_id, 3).state["doc"])

    report = runs.gc(grace=0)
    # A is only in step 1, which is kept (no snapshot has pruned it yet).
    assert report.deleted == []
    assert report.referenced == 2
    assert {row[0] for row in runs.sql("SELECT digest FROM blobs")} == {doc_a, doc_b}

    # The snapshot at step 5 prunes steps 0-4: nothing references A any more.
    runs.agent_run(run.run_id, snapshot_interval=5).run(swap_step, max_steps=6)
    report = runs.gc(grace=0)
    assert [blob.uri for blob in report.deleted] == [f"db:sha256:{doc_a}"]
    assert report.deleted_bytes > 0
    assert {row[0] for row in runs.sql("SELECT digest FROM blobs")} == {doc_b}
    latest = runs.check.latest(run.run_id).state
    assert runs.agent_run(run.run_id).load(latest["doc"]) == DOC_B


def test_an_unreferenced_database_blob_survives_the_grace_period(runs: Runs) -> None:
    run = runs.agent_run(initial_state={})
    run.run(lambda ctx: ctx.state, max_steps=1)
    # Written for a commit that was never made (or is still in flight).
    ref = runs.check.put_blob(run.run_id, b"orphan bytes " * 100)

    assert runs.gc(grace=3600).deleted == []
    assert runs.sql("SELECT count(*) FROM blobs") == [(1,)]
    report = runs.gc(grace=0)
    assert [blob.uri for blob in report.deleted] == [f"db:sha256:{ref.digest}"]


def test_the_delete_checks_the_head_it_scanned(runs: Runs) -> None:
    """A commit between the scan and the delete makes the delete a no-op."""
    run = runs.agent_run(initial_state={})
    run.run(lambda ctx: ctx.state, max_steps=2)
    runs.check.put_blob(run.run_id, b"orphan")
    stale_head = {"head_step": 1, "head_version": 1}  # the head is step 2 by now
    rows = runs.do(
        runs.store.backend.write(
            "runs_gc_delete_blobs",
            {"run_id": run.run_id, "grace": 0.0, "keep": "[]", **stale_head},
        )
    )
    assert rows == []
    assert runs.sql("SELECT count(*) FROM blobs") == [(1,)]


def test_external_blobs_are_collected_after_the_grace_period(runs: Runs, blob_store: Any) -> None:
    run = runs.agent_run(initial_state={"prompt": PROMPT}, snapshot_interval=3, blobs=blob_store)
    run.run(swap_step, max_steps=4)  # the snapshot at 3 pruned step 1, the only one with A
    state = runs.check.latest(run.run_id).state
    orphan_uri = blob_store.put(run.run_id, "f" * 64, b"written, never committed")

    now = blob_store.now()
    report = runs.gc(blob_store, grace=3600, now=now)
    assert report.deleted == []
    assert report.kept_recent == 2  # A (unreferenced) and the orphan are too young

    report = runs.gc(blob_store, grace=3600, now=now + timedelta(hours=2))
    deleted = sorted(blob.uri for blob in report.deleted)
    doc_a_uri = blob_store.uri_for(run.run_id, digest_of(DOC_A.encode()))
    assert deleted == sorted([orphan_uri, doc_a_uri])
    remaining = [blob.uri for blob in blob_store.list(run.run_id)]
    assert remaining == [state["doc"]["uri"]]
    assert runs.agent_run(run.run_id, blobs=blob_store).load(state["doc"]) == DOC_B


def test_a_forks_reference_keeps_the_parents_blob(runs: Runs, local_store: Any) -> None:
    parent = runs.agent_run(
        initial_state={"prompt": PROMPT}, snapshot_interval=3, blobs=local_store
    )
    parent.run(swap_step, max_steps=1)
    fork = runs.check.fork(parent.run_id, 1)
    runs.check.set_status(parent.run_id, "active")
    runs.agent_run(parent.run_id, snapshot_interval=3, blobs=local_store).run(
        swap_step, max_steps=4
    )  # the parent no longer references A

    later = local_store.now() + timedelta(hours=2)
    report = runs.gc(local_store, grace=60, now=later, runs=[parent.run_id])
    fork_doc = runs.check.latest(fork.run_id).state["doc"]
    assert fork_doc["uri"] not in [blob.uri for blob in report.deleted]
    assert runs.agent_run(fork.run_id, blobs=local_store).load(fork_doc) == DOC_A


def test_blobs_of_deleted_runs_are_collected(runs: Runs, local_store: Any) -> None:
    run = runs.agent_run(initial_state={}, blobs=local_store)
    run.run(swap_step, max_steps=1)
    runs.check.delete_run(run.run_id)
    report = runs.gc(local_store, grace=0, now=local_store.now() + timedelta(seconds=1))
    assert len(report.deleted) == 1
    assert list(local_store.list(run.run_id)) == []


def test_negative_grace_is_refused(runs: Runs) -> None:
    with pytest.raises(ConfigurationError, match="grace"):
        runs.gc(grace=-1)


def test_gc_limited_to_some_runs_leaves_the_others(runs: Runs) -> None:
    keep, collect = uuid.uuid4(), uuid.uuid4()
    for run_id in (keep, collect):
        runs.agent_run(run_id, initial_state={}).run(lambda ctx: ctx.state, max_steps=1)
        runs.check.put_blob(run_id, b"orphan of " + str(run_id).encode())
    report = runs.gc(grace=0, runs=[collect])
    assert [blob.run_id for blob in report.deleted] == [collect]
    assert [str(row[0]) for row in runs.sql("SELECT run_id FROM blobs")] == [str(keep)]
