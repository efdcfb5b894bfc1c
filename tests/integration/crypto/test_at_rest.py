"""Encryption at rest: every kind of value is sealed, reads back exactly, and no byte of
plaintext reaches the SQLite file, a PostgreSQL dump or the blob directory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from agentckpt import ConfigurationError, Store
from agentckpt._backends.factory import parse_url
from agentckpt.blobstores.local import LocalBlobStore
from tests.integration.crypto.support import (
    SECRET,
    check_reads,
    encryption,
    file_bytes,
    fill,
    key_text,
    leaks,
)
from tests.support import pg
from tests.support.sample_store import raw_sql


def test_every_value_reads_back_on_both_backends(url: str) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        filled = fill(store)
        check_reads(store, filled)
    with Store.connect(url, encryption=encryption()) as store:  # a new process's view
        check_reads(store, filled)


def test_every_payload_column_is_sealed_and_names_its_key(url: str) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        fill(store)
        [(key_id, kek_id, cipher)] = raw_sql(url, "SELECT key_id, kek_id, cipher FROM data_keys")
    assert (kek_id, cipher) == ("kek-1", "aes-256-gcm")
    for table, column in [
        ("steps", "payload"),
        ("blobs", "data"),
        ("history", "payload"),
        ("effects", "payload"),
    ]:
        rows = raw_sql(url, f"SELECT codec, {column} FROM {table}")
        assert rows, table
        for codec, data in rows:
            data = bytes(data)
            assert codec.endswith("+sealed"), (table, codec)
            # magic, version 1, cipher 1 (AES-256-GCM), then the data key's id
            assert data[:5] == b"\xa7CK\x01\x01", table
            assert data[6 : 6 + data[5]].decode() == key_id, table
    for (config,) in raw_sql(url, "SELECT config FROM runs"):
        assert bytes(config)[:3] == b"\xa7CK"


def test_no_plaintext_in_the_sqlite_file(sqlite_url: str, tmp_path: Path) -> None:
    path = Path(parse_url(sqlite_url).location)
    with Store.connect(sqlite_url, encryption=encryption(metadata=True)) as store:
        fill(store)
        # The file and its WAL as they are while the store is open, and after.
        assert not leaks(path.read_bytes() + Path(f"{path}-wal").read_bytes())
    assert not leaks(file_bytes(path.parent))
    # The test can fail: the same data without encryption does leak.
    clear = tmp_path / "clear.db"
    with Store.connect(f"sqlite:///{clear}") as store:
        fill(store)
    assert leaks(file_bytes(tmp_path))


def test_no_plaintext_in_a_postgres_dump(pg_url: str, pg_blank_url: str) -> None:
    if shutil.which("pg_dump") is None:
        if pg.in_ci():  # CI installs PostgreSQL's client tools: a skip would hide the check
            pytest.fail("pg_dump is not installed")
        pytest.skip("pg_dump is not installed")
    with Store.connect(pg_url, encryption=encryption(metadata=True)) as store:
        fill(store)
    location = parse_url(pg_url).location
    dump = subprocess.run(["pg_dump", location], capture_output=True, check=True).stdout
    assert b"data_keys" in dump
    assert b"kek-1" in dump
    assert not leaks(dump)
    # The test can fail: a clear store's dump shows the secret.
    with Store.connect(pg_blank_url) as store:
        fill(store)
    clear = parse_url(pg_blank_url)
    argv = ["pg_dump", "-n", clear.settings["schema"], clear.location]
    assert leaks(subprocess.run(argv, capture_output=True, check=True).stdout)


def test_no_plaintext_in_the_blob_directory(tmp_path: Path, sqlite_url: str) -> None:
    from agentckpt.runs.artifacts import Artifacts
    from agentckpt.runs.offload import OffloadPolicy

    blobs = LocalBlobStore(tmp_path / "blobs")
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        run = store.create_run()
        artifacts = Artifacts(store, run.run_id, blobs, OffloadPolicy(threshold=1024))
        state, pending = artifacts.prepare({"report": SECRET * 100})
        assert pending
        artifacts.persist(pending, set())
        store.commit(run.run_id, state)
        assert not leaks(file_bytes(tmp_path / "blobs"))
        assert artifacts.load(state["report"]) == SECRET * 100
    # A fresh process reads it too (not from the artifacts' memory cache).
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        artifacts = Artifacts(store, run.run_id, blobs, OffloadPolicy(threshold=1024))
        assert artifacts.load(store.latest(run.run_id).state["report"]) == SECRET * 100  # type: ignore[union-attr]


def test_metadata_is_clear_and_queryable_by_default(url: str) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        store.create_run(metadata={"user": "alice", "cost": 3})
    [(text,)] = raw_sql(url, "SELECT metadata FROM runs")
    assert "alice" in str(text)


def test_metadata_values_sealed_on_request_keys_stay_clear(url: str) -> None:
    with Store.connect(url, encryption=encryption(metadata=True)) as store:
        run = store.create_run(metadata={"user": "alice", "cost": 3})
        store.commit(run.run_id, {"a": 1}, metadata={"tokens": 12})
        assert store.get_run(run.run_id).metadata == {"user": "alice", "cost": 3, "tokens": 12}
    [(text,)] = raw_sql(url, "SELECT metadata FROM runs")
    assert "alice" not in str(text)
    assert "user" in str(text)
    assert "tokens" in str(text)


def test_url_settings_env_and_file(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_AGENTCKPT_KEYS", key_text("kek-1"))
    with Store.connect(f"{sqlite_url}?encryption=env:TEST_AGENTCKPT_KEYS") as store:
        run = store.create_run(config={"k": SECRET})
    keyfile = tmp_path / "keys"
    keyfile.write_text("# test keys\n" + key_text("kek-1") + "\n")
    with Store.connect(f"{sqlite_url}?encryption=file:{keyfile}&encrypt_metadata=true") as store:
        assert store.get_run(run.run_id).config == {"k": SECRET}
        assert store.sealing.metadata
    with pytest.raises(ConfigurationError, match="TEST_AGENTCKPT_NOPE"):
        Store.connect(f"{sqlite_url}?encryption=env:TEST_AGENTCKPT_NOPE")
    with pytest.raises(ConfigurationError, match="encryption="):
        Store.connect(f"{sqlite_url}?encryption=vault:x")
    with pytest.raises(ConfigurationError, match="needs encryption"):
        Store.connect(f"{sqlite_url}?encrypt_metadata=true")
    keyfile.write_text("kek-1:c2hvcnQ=\n")
    with pytest.raises(ConfigurationError, match="entry 1"):
        Store.connect(sqlite_url, encryption=f"file:{keyfile}")


def test_the_async_store_seals_and_reads_the_same(url: str) -> None:
    import asyncio

    from agentckpt import AsyncStore

    async def scenario() -> None:
        async with await AsyncStore.connect(url, encryption=encryption()) as store:
            run = await store.create_run(config={"k": SECRET})
            ref = await store.put_blob(run.run_id, SECRET.encode() * 10)
            await store.commit(run.run_id, {"s": SECRET, "doc": ref.to_json()})
        async with await AsyncStore.connect(url, encryption=encryption()) as store:
            assert (await store.get_run(run.run_id)).config == {"k": SECRET}
            assert (await store.latest(run.run_id)).state["s"] == SECRET  # type: ignore[union-attr]
            assert await store.get_blob(run.run_id, ref) == SECRET.encode() * 10

    asyncio.run(scenario())
    for table, column in (("steps", "payload"), ("blobs", "data"), ("runs", "config")):
        for (data,) in raw_sql(url, f"SELECT {column} FROM {table}"):
            assert not leaks(bytes(data))
