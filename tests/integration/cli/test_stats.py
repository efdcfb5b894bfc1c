"""``agentckpt stats``: rows and bytes per table and per run."""

from __future__ import annotations

import json

import pytest

from tests.support.sample_store import cli, populate


def test_stats_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    code, out, _ = cli(capsys, "--url", url, "stats", "--json")
    assert code == 0
    stats = json.loads(out)
    tables = {t["table"]: t for t in stats["tables"]}
    assert tables["runs"]["rows"] == 3
    assert tables["steps"]["rows"] == 12 + 3
    assert tables["blobs"]["rows"] == 1
    assert tables["step_writes"]["rows"] == 1
    # This SQLite has the dbstat table, so both backends know the bytes on disk.
    assert all(t["total_bytes"] and t["total_bytes"] > 0 for t in tables.values())
    runs = stats["runs"]
    assert next(r["run_id"] for r in runs) == str(sample.conversation)  # largest first
    assert sum(r["step_bytes"] for r in runs) == tables["steps"]["payload_bytes"]
    store = stats["store"]
    if url.startswith("sqlite"):
        assert store["file_bytes"] > 0
        assert store["database_bytes"] > 0
    else:
        assert store["database_bytes"] > 0
        assert store["schema_name"] == url.split("schema=")[1]


def test_stats_table(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    code, out, _ = cli(capsys, "--url", url, "stats", str(sample.worker), "--limit", "5")
    assert code == 0
    assert "TABLE" in out
    assert "PER STEP" in out
    assert "1 run; " in out
    assert str(sample.worker) in out
    assert str(sample.conversation) not in out
