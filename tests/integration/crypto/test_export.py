"""Exports of an encrypted store stay encrypted (unless asked to decrypt) and import into
a store with the same keys byte for byte."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agentckpt import KeyUnavailableError, RunNotFoundError, Store
from agentckpt.ops.exchange import export_runs, import_runs
from tests.integration.crypto.support import SECRET, check_reads, encryption, fill, leaks
from tests.support.sample_store import cli, raw_sql

SEALED_COLUMNS = {
    "runs": "config, metadata",
    "steps": "step, codec, payload, checksum",
    "blobs": "digest, codec, data",
    "history": "seq, codec, payload",
    "effects": "step, key, codec, payload",
}


def _plain(value: object) -> object:
    if isinstance(value, memoryview | bytes):
        return bytes(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, str) and value.startswith("{"):
        return json.dumps(json.loads(value), sort_keys=True)  # metadata: SQLite's text
    return str(value)


def rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    """The stored bytes of every sealed column, comparable across backends."""
    out = {}
    for table, columns in SEALED_COLUMNS.items():
        found = raw_sql(url, f"SELECT run_id, {columns} FROM {table}")
        out[table] = sorted((tuple(_plain(v) for v in row) for row in found), key=repr)
    return out


def export(store: Store, *, decrypt: bool = False) -> str:
    out = io.StringIO()
    export_runs(store, [r.run_id for r in store.list_runs(limit=100)], out, decrypt=decrypt)
    return out.getvalue()


@pytest.fixture(params=["to sqlite", "to postgres"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Another store than the test's ``sqlite_url``."""
    if request.param == "to sqlite":
        return f"sqlite:///{tmp_path}/target.db"
    return str(request.getfixturevalue("pg_url"))


def test_an_export_stays_encrypted_and_imports_byte_for_byte(
    sqlite_url: str, target_url: str
) -> None:
    with Store.connect(sqlite_url, encryption=encryption(metadata=True)) as store:
        filled = fill(store)
        text = export(store)
    assert not leaks(text.encode())
    kinds = [json.loads(line)["type"] for line in text.splitlines()]
    assert kinds[:2] == ["header", "data_key"]
    with Store.connect(target_url, encryption=encryption(metadata=True)) as target:
        summary = import_runs(target, text.splitlines())
        assert len(summary.imported) == 2
        check_reads(target, filled)
    assert rows(target_url) == rows(sqlite_url)
    # The source's data keys joined the target's own (which it made on opening).
    keys = "SELECT key_id, kek_id, wrapped FROM data_keys"
    assert set(map(tuple, raw_sql(sqlite_url, keys))) < set(map(tuple, raw_sql(target_url, keys)))


def test_an_import_without_the_keys_is_refused_and_writes_no_run(
    sqlite_url: str, tmp_path: Path
) -> None:
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        filled = fill(store)
        text = export(store)
    target = f"sqlite:///{tmp_path}/target.db"
    for opened in ({}, {"encryption": encryption("kek-2")}):
        with Store.connect(target, **opened) as store:
            with pytest.raises(KeyUnavailableError) as caught:
                import_runs(store, text.splitlines())
            assert caught.value.run_id in (filled.run_id, filled.conversation_id)
            assert caught.value.key_id
            for run_id in (filled.run_id, filled.conversation_id):
                with pytest.raises(RunNotFoundError):
                    store.get_run(run_id)
        if not opened:  # a clear store took no data key, so it still writes in clear
            assert raw_sql(target, "SELECT count(*) FROM data_keys") == [(0,)]


def test_a_decrypted_export_is_clear_and_imports_into_a_clear_store(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.connect(url, encryption=encryption(metadata=True)) as store:
        filled = fill(store)
        text = export(store, decrypt=True)
    assert SECRET in text
    assert "data_key" not in text
    assert "+sealed" not in text
    target = f"sqlite:///{tmp_path}/clear.db"
    with Store.connect(target) as store:
        import_runs(store, text.splitlines())
        check_reads(store, filled)
    # The same through the command line: --decrypt needs the URL's keys.
    keyed = f"{url}{'&' if '?' in url else '?'}encryption=env:TEST_KEYS"
    import os

    from tests.integration.crypto.support import key_text

    os.environ["TEST_KEYS"] = key_text("kek-1")
    try:
        out_file = tmp_path / "clear.jsonl"
        code, _, err = cli(capsys, "export", "--url", keyed, "--decrypt", "-o", str(out_file))
        assert code == 0, err
        assert SECRET in out_file.read_text()
        code, _, err = cli(capsys, "export", "--url", keyed, "-o", str(out_file))
        assert code == 0, err
        assert not leaks(out_file.read_bytes())
    finally:
        del os.environ["TEST_KEYS"]


def test_a_flipped_byte_in_an_export_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        fill(store)
        text = export(store)
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "step")
    record = json.loads(lines[number])
    payload = bytearray(__import__("base64").b64decode(record["row"]["payload"]))
    payload[30] ^= 1
    record["row"]["payload"] = __import__("base64").b64encode(bytes(payload)).decode()
    lines[number] = json.dumps(record)
    from agentckpt import CorruptDataError

    with (
        Store.connect(f"sqlite:///{tmp_path}/t.db", encryption=encryption()) as target,
        pytest.raises(CorruptDataError),
    ):
        import_runs(target, lines)


def test_decrypt_without_the_keys_writes_nothing(sqlite_url: str) -> None:
    from agentckpt import ConfigurationError

    with Store.connect(sqlite_url, encryption=encryption()) as store:
        fill(store)
    with Store.connect(sqlite_url) as store:
        out = io.StringIO()
        with pytest.raises(ConfigurationError, match="keys"):
            export_runs(store, [r.run_id for r in []], out, decrypt=True)
        assert out.getvalue() == ""
