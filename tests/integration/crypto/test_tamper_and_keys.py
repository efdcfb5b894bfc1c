"""A changed byte is CorruptDataError; a wrong, missing or revoked key is
KeyUnavailableError naming the run and the key; neither ever leaves a partial state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentckpt import CorruptDataError, KeyUnavailableError, Store
from agentckpt.blobstores.local import LocalBlobStore
from agentckpt.conversation import Conversations
from agentckpt.runs.artifacts import Artifacts
from agentckpt.runs.effects import Effects
from agentckpt.runs.offload import OffloadPolicy
from tests.integration.crypto.support import SECRET, encryption, fill
from tests.support.sample_store import raw_sql


def flip(data: Any, at: int) -> bytes:
    """``data`` with one bit of byte ``at`` flipped."""
    out = bytearray(bytes(data))
    out[at] ^= 0x01
    return bytes(out)


@pytest.mark.parametrize("where", ["ciphertext", "tag", "nonce", "key id"])
def test_a_flipped_byte_in_a_step_is_corrupt_data(url: str, where: str) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        filled = fill(store)
    rid = str(filled.run_id)
    [(payload,)] = raw_sql(url, "SELECT payload FROM steps WHERE run_id = ? AND step = 2", rid)
    at = {"ciphertext": 40, "tag": len(payload) - 1, "nonce": 25, "key id": 8}[where]
    raw_sql(
        url, "UPDATE steps SET payload = ? WHERE run_id = ? AND step = 2", flip(payload, at), rid
    )
    with Store.connect(url, encryption=encryption()) as store:
        with pytest.raises(CorruptDataError, match=rid):
            store.latest(filled.run_id)
        assert store.state_at(filled.run_id, 1).state["messages"] == [SECRET]  # others fine


@pytest.mark.parametrize(
    ("table", "column"),
    [("blobs", "data"), ("history", "payload"), ("effects", "payload"), ("runs", "config")],
)
def test_a_flipped_byte_in_any_sealed_column_is_corrupt_data(
    url: str, table: str, column: str
) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        filled = fill(store)
    rows = raw_sql(url, f"SELECT run_id, {column} FROM {table}")
    for run_id, data in rows:
        raw_sql(
            url,
            f"UPDATE {table} SET {column} = ? WHERE run_id = ? AND {column} = ?",
            flip(data, 30),
            run_id,
            data,
        )
    with Store.connect(url, encryption=encryption()) as store:
        read = {
            "blobs": lambda: store.get_blob(filled.run_id, filled.blob_ref),
            "history": lambda: Conversations(store).all_messages(filled.conversation_id),
            "effects": lambda: Effects(store).recorded(filled.run_id, 2, "tool"),
            "runs": lambda: store.get_run(filled.run_id),
        }[table]
        with pytest.raises(CorruptDataError):
            read()


def test_a_flipped_byte_in_the_blob_directory_is_corrupt_data(
    tmp_path: Path, sqlite_url: str
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        run = store.create_run()
        artifacts = Artifacts(store, run.run_id, blobs, OffloadPolicy(threshold=1024))
        state, pending = artifacts.prepare({"report": SECRET * 100})
        artifacts.persist(pending, set())
        store.commit(run.run_id, state)
    [path] = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    for at in (5, 40, path.stat().st_size - 1):
        original = path.read_bytes()
        path.write_bytes(flip(original, at))
        with Store.connect(sqlite_url, encryption=encryption()) as store:
            fresh = Artifacts(store, run.run_id, blobs, OffloadPolicy(threshold=1024))
            with pytest.raises(CorruptDataError):
                fresh.load(state["report"])
        path.write_bytes(original)


def test_a_wrong_key_names_the_run_and_the_key(url: str) -> None:
    with Store.connect(url, encryption=encryption("kek-1")) as store:
        filled = fill(store)
    [(data_key,)] = raw_sql(url, "SELECT key_id FROM data_keys")
    # kek-wrong is another id (this store makes its own data key for new writes).
    with (
        Store.connect(url, encryption=encryption("kek-wrong")) as store,
        pytest.raises(KeyUnavailableError) as caught,
    ):
        store.latest(filled.run_id)
    assert caught.value.run_id == filled.run_id
    assert caught.value.key_id == "kek-1"
    assert str(filled.run_id) in str(caught.value)
    assert data_key in str(caught.value)


def test_a_wrong_key_under_the_same_id_fails_reads_and_writes_without_a_trace(url: str) -> None:
    from agentckpt.crypto import Encryption, StaticKeys

    with Store.connect(url, encryption=encryption("kek-1")) as store:
        filled = fill(store)
        head = store.latest(filled.run_id).step  # type: ignore[union-attr]
    before = raw_sql(url, "SELECT run_id, step, payload FROM steps ORDER BY run_id, step")
    impostor = Encryption(keys=StaticKeys({"kek-1": bytes(32)}))
    with Store.connect(url, encryption=impostor) as store:
        for read in (
            lambda: store.latest(filled.run_id),
            lambda: store.get_run(filled.run_id),
            lambda: store.get_blob(filled.run_id, filled.blob_ref),
        ):
            with pytest.raises(KeyUnavailableError, match="kek-1") as caught:
                read()
            assert caught.value.run_id == filled.run_id
        with pytest.raises(KeyUnavailableError):
            store.commit(filled.run_id, {"new": SECRET})
        with pytest.raises(KeyUnavailableError):
            store.create_run(config={"x": 1})
    assert raw_sql(url, "SELECT run_id, step, payload FROM steps ORDER BY run_id, step") == before
    with Store.connect(url, encryption=encryption("kek-1")) as store:
        assert store.latest(filled.run_id).step == head  # type: ignore[union-attr]


def test_a_revoked_key_and_a_store_without_encryption(url: str) -> None:
    with Store.connect(url, encryption=encryption("kek-1")) as store:
        filled = fill(store)
    # kek-1 revoked: the provider no longer holds it (only kek-2).
    with Store.connect(url, encryption=encryption("kek-2")) as store:
        with pytest.raises(KeyUnavailableError, match="not held") as caught:
            store.latest(filled.run_id)
        assert caught.value.key_id == "kek-1"
        # New writes go under a data key of kek-2 at once and read back.
        run = store.create_run(config={"k": 1})
        store.commit(run.run_id, {"a": SECRET})
        assert store.latest(run.run_id).state == {"a": SECRET}  # type: ignore[union-attr]
    with Store.connect(url) as store:
        with pytest.raises(KeyUnavailableError, match="encryption=") as caught:
            store.latest(filled.run_id)
        assert caught.value.run_id == filled.run_id
        assert caught.value.key_id.startswith("dk-")


def test_an_encrypted_store_opened_without_keys_writes_nothing_in_clear(url: str) -> None:
    with Store.connect(url, encryption=encryption()) as store:
        filled = fill(store)
    before = raw_sql(url, "SELECT count(*) FROM runs")
    with Store.connect(url) as store:
        with pytest.raises(KeyUnavailableError, match="encryption="):
            store.get_run(filled.run_id)  # its config is sealed
        with pytest.raises(KeyUnavailableError, match="nothing was written"):
            store.create_run(config={"k": SECRET})
        with pytest.raises(KeyUnavailableError, match="nothing was written"):
            store.put_blob(filled.run_id, SECRET.encode())
    assert raw_sql(url, "SELECT count(*) FROM runs") == before


def test_a_blob_directory_value_under_a_data_key_made_later_is_read(
    tmp_path: Path, sqlite_url: str
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    policy = OffloadPolicy(threshold=1024)
    with Store.connect(sqlite_url, encryption=encryption("kek-1", "kek-2")) as reader:
        run = reader.create_run()
        # Another process, with kek-2 current, makes its own data key and writes a blob.
        with Store.connect(sqlite_url, encryption=encryption("kek-2", "kek-1")) as writer:
            artifacts = Artifacts(writer, run.run_id, blobs, policy)
            state, pending = artifacts.prepare({"report": SECRET * 100})
            artifacts.persist(pending, set())
        fresh = Artifacts(reader, run.run_id, blobs, policy)
        assert fresh.load(state["report"]) == SECRET * 100
