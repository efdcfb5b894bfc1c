"""``agentckpt blobs gc``: present because ``agentckpt.runs.gc_blobs`` exists."""

from __future__ import annotations

import json

import pytest

from agentckpt import Store
from tests.support.sample_store import cli, populate, raw_sql


def test_gc_deletes_only_unreferenced_blobs(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    with Store.connect(url) as store:
        orphan = store.put_blob(sample.worker, b"nobody refers to me " * 100)
    code, out, _ = cli(capsys, "--url", url, "blobs", "gc", "--grace", "0s", "--json")
    assert code == 0
    report = json.loads(out)
    assert [d["uri"] for d in report["deleted"]] == [f"db:sha256:{orphan.digest}"]
    remaining = raw_sql(url, "SELECT digest FROM blobs")
    assert [r[0] for r in remaining] == [sample.blob_digest]  # the referenced one stays

    code, out, _ = cli(capsys, "--url", url, "blobs", "gc")
    assert code == 0
    assert out.startswith("scanned 3 runs: ")
