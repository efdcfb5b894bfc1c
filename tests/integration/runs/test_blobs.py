"""Large values: offloaded to a blob store before the step commits, loaded lazily, verified."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentckpt import ConfigurationError, CorruptDataError, NotFoundError, StoreError
from agentckpt._core.blobs import is_ref
from agentckpt.runs import Artifact, OffloadPolicy
from tests.integration.runs.conftest import Runs
from tests.support.runs import PROMPT

BIG = "retrieved document. " * 400  # 8000 bytes of UTF-8
PDF = b"%PDF-1.7 " + bytes(range(256)) * 8


def artifacts_step(ctx: Any) -> Any:
    """Step 1 adds large values of every kind; step 2 reads them back through ctx.load."""
    if ctx.step == 1:
        ctx.state.update(
            doc=BIG,
            small="short text stays inline",
            raw=b"\x00\x01 binary",
            report=Artifact(PDF, "application/pdf"),
            many=[f"line {i}" for i in range(800)],  # a large container of small strings
        )
    elif ctx.step == 2:
        ctx.state["loaded"] = {
            "doc": ctx.load(ctx.state["doc"]) == BIG,
            "raw": ctx.load(ctx.state["raw"]) == b"\x00\x01 binary",
            "report": ctx.load(ctx.state["report"]) == PDF,
            "small": ctx.load(ctx.state["small"]),
        }
    return ctx.state


def test_large_values_move_to_database_blobs_and_load_back(runs: Runs) -> None:
    run = runs.agent_run(initial_state={"prompt": PROMPT})
    result = run.run(artifacts_step, max_steps=2)
    state = result.state

    assert is_ref(state["doc"])
    assert state["doc"]["type"] == "text"
    assert state["doc"]["uri"].startswith("db:sha256:")
    assert state["doc"]["size"] == len(BIG)
    assert is_ref(state["raw"])
    assert state["raw"]["type"] == "bytes"
    assert state["report"]["media_type"] == "application/pdf"
    assert state["small"] == "short text stays inline"
    assert state["many"] == [f"line {i}" for i in range(800)]  # containers never move
    assert state["prompt"] == PROMPT
    assert state["loaded"] == {
        "doc": True,
        "raw": True,
        "report": True,
        "small": "short text stays inline",
    }
    digests = {row[0] for row in runs.sql("SELECT digest FROM blobs")}
    assert digests == {state[k]["$blob"].removeprefix("sha256:") for k in ("doc", "raw", "report")}
    # The checkpoint rows stay small: the document is not in them.
    assert all(info.stored_bytes < len(BIG) for info in runs.check.steps(run.run_id))
    assert run.load(state["doc"]) == BIG


def test_the_threshold_is_configurable(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        ctx.state["note"] = "x" * 200
        return ctx.state

    state = (
        runs.agent_run(initial_state={}, offload=OffloadPolicy(threshold=100))
        .run(step, max_steps=1)
        .state
    )
    assert is_ref(state["note"])


def test_a_blob_is_written_once_while_the_state_keeps_referencing_it(runs: Runs) -> None:
    def step(ctx: Any) -> Any:
        ctx.state["doc"] = BIG if ctx.step == 1 else ctx.state["doc"]
        ctx.state["n"] = ctx.step
        return ctx.state

    run = runs.agent_run(initial_state={"prompt": PROMPT}, snapshot_interval=3)
    run.run(step, max_steps=8)
    assert runs.sql("SELECT count(*) FROM blobs") == [(1,)]
    assert run.load(runs.check.latest(run.run_id).state["doc"]) == BIG


def test_a_corrupted_blob_is_detected_on_load(runs: Runs) -> None:
    run = runs.agent_run(initial_state={"prompt": PROMPT})
    state = run.run(artifacts_step, max_steps=1).state
    digest = state["raw"]["$blob"].removeprefix("sha256:")
    codec = runs.sql("SELECT codec FROM blobs WHERE digest = ?", digest)[0][0]
    assert codec == "none"  # 10 bytes do not compress
    runs.sql("UPDATE blobs SET data = ? WHERE digest = ?", b"\x00\x01 bInary", digest)
    fresh = runs.agent_run(run.run_id)  # no cache: reads the database
    with pytest.raises(CorruptDataError, match="sha256"):
        fresh.load(state["raw"])


def test_external_blob_stores_hold_the_blobs_and_the_database_only_references(
    runs: Runs, blob_store: Any
) -> None:
    run = runs.agent_run(initial_state={"prompt": PROMPT}, blobs=blob_store)
    state = run.run(artifacts_step, max_steps=2).state

    scheme = "file://" if type(blob_store).__name__ == "LocalBlobStore" else "s3://"
    assert state["doc"]["uri"].startswith(scheme)
    assert state["loaded"]["doc"] is True
    assert runs.sql("SELECT count(*) FROM blobs") == [(0,)]
    stored = {blob.digest for blob in blob_store.list(run.run_id)}
    assert stored == {state[k]["$blob"].removeprefix("sha256:") for k in ("doc", "raw", "report")}
    # A new process (a fresh run object) loads them lazily from the store.
    assert runs.agent_run(run.run_id, blobs=blob_store).load(state["report"]) == PDF


def test_reading_an_external_blob_needs_its_store(runs: Runs, local_store: Any) -> None:
    run = runs.agent_run(initial_state={}, blobs=local_store)
    state = run.run(artifacts_step, max_steps=1).state
    with pytest.raises(ConfigurationError, match="blobs="):
        runs.agent_run(run.run_id).load(state["doc"])


class Recording:
    """A real blob store that checks, at each put, that the step is not committed yet."""

    def __init__(self, inner: Any, runs: Runs, fail: bool = False) -> None:
        self.inner = inner
        self.runs = runs
        self.fail = fail
        self.heads_at_put: list[int | None] = []

    def put(self, run_id: uuid.UUID, digest: str, data: bytes) -> str:
        self.heads_at_put.append(self.runs.check.get_run(run_id).head_step)
        if self.fail:
            raise StoreError("blob store: disk on fire (injected)")
        return str(self.inner.put(run_id, digest, data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_blob_is_durable_before_the_step_that_references_it_commits(
    runs: Runs, local_store: Any
) -> None:
    store = Recording(local_store, runs)
    run = runs.agent_run(initial_state={"prompt": PROMPT}, blobs=store)
    run.run(artifacts_step, max_steps=1)
    # Three blobs put while the head was still step 0: before step 1 committed.
    assert store.heads_at_put == [0, 0, 0]


def test_a_failed_blob_write_commits_nothing(runs: Runs, local_store: Any) -> None:
    store = Recording(local_store, runs, fail=True)
    run = runs.agent_run(initial_state={"prompt": PROMPT}, blobs=store)
    with pytest.raises(StoreError, match="disk on fire"):
        run.run(artifacts_step, max_steps=1)
    info = runs.check.get_run(run.run_id)
    assert (info.head_step, info.status) == (0, "active")  # not the run's fault


# -- the stores themselves --------------------------------------------------------------


def test_blob_store_put_get_list_delete(blob_store: Any) -> None:
    run_id = uuid.uuid4()
    uri = blob_store.put(run_id, "ab" * 32, b"stored bytes")
    assert uri == blob_store.uri_for(run_id, "ab" * 32)
    assert blob_store.get(uri) == b"stored bytes"
    assert blob_store.put(run_id, "ab" * 32, b"stored bytes") == uri  # idempotent

    [listed] = list(blob_store.list(run_id))
    assert (listed.uri, listed.run_id, listed.digest, listed.stored_bytes) == (
        uri,
        run_id,
        "ab" * 32,
        12,
    )
    assert list(blob_store.list(uuid.uuid4())) == []

    past = listed.modified_at - timedelta(seconds=5)
    assert blob_store.delete(uri, unless_modified_after=past) is False  # fresher than cutoff
    assert blob_store.get(uri) == b"stored bytes"
    future = blob_store.now() + timedelta(seconds=5)
    assert blob_store.delete(uri, unless_modified_after=future) is True
    with pytest.raises(NotFoundError):
        blob_store.get(uri)
    assert blob_store.delete(uri, unless_modified_after=future) is False


def test_blob_store_refuses_uris_of_another_store(blob_store: Any, tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="not in this blob store"):
        blob_store.get((tmp_path / "elsewhere" / "x").as_uri())
    with pytest.raises(ConfigurationError, match="not in this blob store"):
        blob_store.get("s3://some-other-bucket/agent/x/y")


def test_local_put_refreshes_an_existing_blob_and_leaves_no_temp_files(local_store: Any) -> None:
    run_id = uuid.uuid4()
    uri = local_store.put(run_id, "cd" * 32, b"data")
    path = local_store.root / str(run_id) / ("cd" * 32)
    old = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(path, (old, old))
    local_store.put(run_id, "cd" * 32, b"data")
    assert path.stat().st_mtime > old  # a collector now sees it as fresh
    assert sorted(p.name for p in path.parent.iterdir()) == ["cd" * 32]
    assert local_store.get(uri) == b"data"


def test_s3_store_reads_the_servers_clock(s3_store: Any) -> None:
    now = s3_store.now()
    assert now.tzinfo is not None
    assert abs((now - datetime.now(UTC)).total_seconds()) < 3600
