"""``agentckpt export`` / ``import``: exact round trips between SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from agentckpt import StateMigrations, Store
from tests.support.sample_store import POLICY, cli, populate, raw_sql

CHILD_TABLES = {
    "blobs": "digest, codec, size, data, created_at",
    "history": "seq, step, item_count, codec, payload, raw_bytes, created_at",
    "effects": "step, key, codec, payload, created_at",
    "events": "event_id, step, kind, codec, payload, created_at",
    "run_threads": "thread_id, namespace",
    "step_index": "checkpoint_id, step, parent_id, invocation_id, metadata",
    "step_writes": "checkpoint_id, task_id, idx, channel, task_path, type, codec, payload",
}


def snapshot(url: str) -> dict[str, Any]:
    """Everything a store holds, through the API and as raw rows, comparable across backends."""
    out: dict[str, Any] = {}
    # No state migrations (a key no state has): states are read exactly as stored.
    raw = StateMigrations(key="no such key")
    with Store.connect(url, policy=POLICY, migrate=False, migrations=raw) as store:
        for run in store.list_runs(limit=1000):
            rid = run.run_id
            steps = store.steps(rid)
            out[str(rid)] = {
                "run": asdict(run),
                "steps": [asdict(info) for info in steps],
                "states": [json.dumps(store.state_at(rid, i.step).state) for i in steps],
                "latest": json.dumps(store.latest(rid).state) if steps else None,
                "blobs": {
                    digest: store.get_blob(
                        rid, {"$blob": "sha256:" + digest, "uri": "", "size": 0, "codec": ""}
                    )
                    for (digest,) in raw_sql(
                        url, "SELECT digest FROM blobs WHERE run_id = ?", str(rid)
                    )
                },
                "tables": {
                    table: sorted(
                        tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                        for row in raw_sql(
                            url, f"SELECT {columns} FROM {table} WHERE run_id = ?", str(rid)
                        )
                    )
                    for table, columns in CHILD_TABLES.items()
                },
            }
    return out


def _plain(value: Any) -> Any:
    """A raw column value as SQLite returns it (times as UTC text, uuids as text)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds")[:23]
    if isinstance(value, UUID):
        return str(value)
    return value


def normalize(tables: dict[str, Any]) -> dict[str, Any]:
    """Raw rows read back from either backend as the same Python values."""
    return {
        table: sorted((tuple(_plain(v) for v in row) for row in rows), key=repr)
        for table, rows in tables.items()
    }


def comparable(snap: dict[str, Any]) -> dict[str, Any]:
    return {rid: {**data, "tables": normalize(data["tables"])} for rid, data in snap.items()}


@pytest.mark.postgres
def test_sqlite_to_postgres_to_sqlite_is_exact(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = f"sqlite:///{tmp_path}/first.db"
    last = f"sqlite:///{tmp_path}/last.db"
    populate(first)
    files = [tmp_path / f"{n}.jsonl" for n in ("a", "b", "c")]

    assert cli(capsys, "--url", first, "export", "-o", str(files[0]))[0] == 0
    code, out, _ = cli(capsys, "--url", pg_url, "import", str(files[0]), "--json")
    assert code == 0
    assert len(json.loads(out)["imported"]) == 3
    assert cli(capsys, "--url", pg_url, "export", "-o", str(files[1]))[0] == 0
    assert cli(capsys, "--url", last, "import", str(files[1]))[0] == 0
    assert cli(capsys, "--url", last, "export", "-o", str(files[2]))[0] == 0

    texts = [f.read_text().splitlines() for f in files]
    # Byte-for-byte the same runs, whichever backend wrote the file; only the header's
    # dialect differs.
    assert texts[0] == texts[2]
    assert texts[0][1:] == texts[1][1:]
    assert json.loads(texts[1][0])["dialect"] == "postgresql"

    original, via_pg, back = snapshot(first), snapshot(pg_url), snapshot(last)
    assert len(original) == 3
    assert original == back
    # Across backends the records, states, steps and blobs are equal; raw rows are equal
    # once read as the same Python types.
    assert comparable(original) == comparable(via_pg)


def test_export_lines_carry_every_row(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = populate(sqlite_url)
    path = tmp_path / "out.jsonl"
    code, _, err = cli(
        capsys, "--url", sqlite_url, "export", str(sample.conversation), "-o", str(path)
    )
    assert code == 0
    assert "exported 1 runs" in err
    records = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "header"
    assert kinds[-1] == "end"
    assert records[-1]["runs"] == 1
    assert kinds.count("run") == 1
    assert kinds.count("step") == 12
    for kind in ("blob", "history", "effect", "event", "thread", "step_index", "step_write"):
        assert kinds.count(kind) == 1, kind
    run = records[1]["row"]
    assert run["metadata"] == {"cost": 0.5, "input_tokens": 1200, "user_id": "user_abc123"}
    blob = next(r["row"] for r in records if r["type"] == "blob")
    assert blob["digest"] == sample.blob_digest
    assert blob["size"] > 0
    assert base64.b64decode(blob["data"])


def test_filters_select_runs(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    populate(sqlite_url)
    code, out, _ = cli(capsys, "--url", sqlite_url, "export", "--agent", "worker")
    assert code == 0
    runs = [json.loads(line) for line in out.splitlines() if line.endswith('"type":"run"}')]
    assert [r["row"]["agent_id"] for r in runs] == ["worker"]


def test_conflicts(sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(sqlite_url)
    path = tmp_path / "out.jsonl"
    assert cli(capsys, "--url", sqlite_url, "export", "-o", str(path))[0] == 0

    code, _, err = cli(capsys, "--url", sqlite_url, "import", str(path))
    assert code == 1
    assert err.count("\n") == 1
    assert "already exists" in err
    assert "--on-conflict" in err

    code, out, _ = cli(
        capsys, "--url", sqlite_url, "import", str(path), "--on-conflict", "skip", "--json"
    )
    assert code == 0
    assert len(json.loads(out)["skipped"]) == 3

    with Store.connect(sqlite_url) as store:
        store.commit(sample.worker, {"changed": True})
    code, out, _ = cli(
        capsys, "--url", sqlite_url, "import", str(path), "--on-conflict", "replace", "--json"
    )
    assert code == 0
    assert len(json.loads(out)["replaced"]) == 3
    with Store.connect(sqlite_url) as store:
        latest = store.latest(sample.worker)
        assert latest is not None
        assert latest.state == {"n": 3, "items": [0, 1, 2]}


def test_truncated_file_imports_only_complete_runs(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    populate(sqlite_url)
    path = tmp_path / "out.jsonl"
    assert cli(capsys, "--url", sqlite_url, "export", "-o", str(path))[0] == 0
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")  # no end line
    target = f"sqlite:///{tmp_path}/target.db"
    code, _, err = cli(capsys, "--url", target, "import", str(cut))
    assert code == 1
    assert "truncated" in err
    assert err.count("\n") == 1
    with Store.connect(target) as store:
        assert len(store.list_runs()) == 2  # the last run was not written


def test_corrupt_step_is_refused_before_writing(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = populate(sqlite_url)
    code, out, _ = cli(capsys, "--url", sqlite_url, "export", str(sample.worker))
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    step = next(r["row"] for r in records if r["type"] == "step" and r["row"]["step"] == 2)
    step["payload"] = base64.b64encode(b'[{"op":"add","path":"/x","value":1}]').decode()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    target = f"sqlite:///{tmp_path}/target.db"
    code, _, err = cli(capsys, "--url", target, "import", str(bad))
    assert code == 1
    assert "step 2" in err
    assert "checksum" in err
    assert raw_sql(target, "SELECT count(*) FROM steps") == [(0,)]


def test_leftovers_of_a_crashed_import_are_replaced(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = populate(sqlite_url)
    path = tmp_path / "out.jsonl"
    assert cli(capsys, "--url", sqlite_url, "export", str(sample.worker), "-o", str(path))[0] == 0
    target = f"sqlite:///{tmp_path}/target.db"
    assert cli(capsys, "--url", target, "migrate")[0] == 0
    # What a killed import leaves: step rows with no runs row (invisible to readers).
    raw_sql(
        target,
        "INSERT INTO steps (run_id, step, kind, codec, payload, raw_bytes, state_bytes, "
        "checksum) VALUES (?, 99, 'snapshot', 'json', x'7b7d', 2, 2, x'00')",
        str(sample.worker),
    )
    assert cli(capsys, "--url", target, "import", str(path))[0] == 0
    steps = raw_sql(
        target, "SELECT step FROM steps WHERE run_id = ? ORDER BY step", str(sample.worker)
    )
    assert steps == [(1,), (2,), (3,)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ('{"type":"run"}\n', "not an agentckpt export"),
        ('{"type":"header","format":"agentckpt-export","format_version":99}\n', "version 99"),
        ("not json\n", "not JSON"),
    ],
)
def test_bad_files_are_one_line_errors(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    code, _, err = cli(capsys, "--url", sqlite_url, "import", str(path))
    assert code == 1
    assert message in err
    assert err.count("\n") == 1


def test_missing_file_is_one_line_error(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "--url", sqlite_url, "import", str(tmp_path / "nope.jsonl"))
    assert code == 1
    assert "nope.jsonl" in err
    assert err.count("\n") == 1
