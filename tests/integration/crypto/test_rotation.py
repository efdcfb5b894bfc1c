"""Key rotation: a new KEK is used for new writes at once, ``keys rotate`` re-wraps the
data keys, ``--reencrypt`` moves every value to a new data key, resumably after SIGKILL,
with nothing lost; ``keys status`` shows the key ids in use and never key material."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentckpt import KeyUnavailableError, Store
from tests.integration.crypto.support import (
    KEK_1,
    KEK_2,
    SECRET,
    check_reads,
    encryption,
    fill,
    key_text,
)
from tests.support.sample_store import cli, raw_sql

ROOT = Path(__file__).resolve().parents[3]


def data_keys(url: str) -> dict[str, tuple[str, str]]:
    """data key id -> (KEK id, state)."""
    rows = raw_sql(url, "SELECT key_id, kek_id, state FROM data_keys")
    return {key_id: (kek, state) for key_id, kek, state in rows}


def sealed_key_ids(url: str) -> set[str]:
    """The data keys named by the sealed step, blob, history and effect values."""
    found = set()
    for table, column in [
        ("steps", "payload"),
        ("blobs", "data"),
        ("history", "payload"),
        ("effects", "payload"),
        ("runs", "config"),
    ]:
        for (data,) in raw_sql(url, f"SELECT {column} FROM {table}"):
            data = bytes(data)
            found.add(data[6 : 6 + data[5]].decode())
    return found


def status(capsys: pytest.CaptureFixture[str], url: str, *keys: str) -> dict:  # type: ignore[type-arg]
    args = ["keys", "status", "--url", url, "--json"]
    code, out, err = cli(capsys, *args, *(["--keys", keys[0]] if keys else []))
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_a_new_kek_serves_new_writes_at_once_and_rotate_rewraps(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.connect(url, encryption=encryption("kek-1")) as store:
        filled = fill(store)
    [(first, (kek, _))] = data_keys(url).items()
    assert kek == "kek-1"
    # kek-2 becomes current; kek-1 stays listed until the rotation is done.
    with Store.connect(url, encryption=encryption("kek-2", "kek-1")) as store:
        run = store.create_run(config={"k": SECRET})
        check_reads(store, filled)
    keys = data_keys(url)
    [second] = set(keys) - {first}
    assert keys[second][0] == "kek-2"
    [(config,)] = raw_sql(url, "SELECT config FROM runs WHERE run_id = ?", str(run.run_id))
    assert second.encode() in bytes(config)
    assert status(capsys, url)["keks_in_use"] == ["kek-1", "kek-2"]

    monkeypatch.setenv("TEST_KEYS", key_text("kek-2", "kek-1"))
    code, out, err = cli(capsys, "keys", "rotate", "--url", url, "--keys", "env:TEST_KEYS")
    assert code == 0, err
    assert f"re-wrapped data key {first} (was under KEK kek-1)" in out
    assert {kek for kek, _ in data_keys(url).values()} == {"kek-2"}
    # kek-1 can go: everything reads with kek-2 alone, no payload was rewritten.
    with Store.connect(url, encryption=encryption("kek-2")) as store:
        check_reads(store, filled)
    assert first in sealed_key_ids(url)
    shown = status(capsys, url, "env:TEST_KEYS")
    assert shown["keks_in_use"] == ["kek-2"]
    assert shown["current_kek"] == "kek-2"
    assert all(entry["kek_held"] for entry in shown["data_keys"])


def test_reencrypt_moves_every_value_and_retires_the_old_keys(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.connect(url, encryption=encryption("kek-1", metadata=True)) as store:
        filled = fill(store)
    old = set(data_keys(url))
    monkeypatch.setenv("TEST_KEYS", key_text("kek-2", "kek-1"))
    code, _, err = cli(
        capsys, "keys", "rotate", "--reencrypt", "--url", url, "--keys", "env:TEST_KEYS"
    )
    assert code == 0, err
    assert "steps:" in err  # progress
    keys = data_keys(url)
    [new] = set(keys) - old
    assert keys[new] == ("kek-2", "active")
    assert all(keys[k][1] == "retired" for k in old)
    assert sealed_key_ids(url) == {new}
    [(metadata,)] = raw_sql(url, "SELECT metadata FROM runs WHERE run_id = ?", str(filled.run_id))
    assert SECRET not in str(metadata)
    with Store.connect(url, encryption=encryption("kek-2", metadata=True)) as store:
        check_reads(store, filled)
    shown = status(capsys, url)
    counts = {e["data_key"]: e["values"] for e in shown["data_keys"]}
    assert counts[new] > 0
    assert all(counts[k] == 0 for k in old)


def test_status_and_rotate_never_print_key_material(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.connect(sqlite_url, encryption=encryption("kek-1")) as store:
        fill(store)
    monkeypatch.setenv("TEST_KEYS", key_text("kek-2", "kek-1"))
    outputs = []
    for args in (["status"], ["status", "--json"], ["rotate", "--reencrypt"], ["status"]):
        code, out, err = cli(capsys, "keys", *args, "--url", sqlite_url, "--keys", "env:TEST_KEYS")
        assert code == 0, err
        outputs.append(out + err)
    text = "".join(outputs)
    wrapped = [bytes(w) for (w,) in raw_sql(sqlite_url, "SELECT wrapped FROM data_keys")]
    for secret in (KEK_1, KEK_2, *wrapped):
        for form in (base64.b64encode(secret).decode(), secret.hex()):
            assert form not in text
    assert "kek-1" in text


def test_rotate_without_a_key_provider_says_what_to_pass(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "keys", "rotate", "--url", sqlite_url)
    assert code != 0
    assert "--keys env:VARIABLE" in err


def test_reencrypt_killed_midway_resumes_and_loses_nothing(sqlite_url: str) -> None:
    with Store.connect(sqlite_url, encryption=encryption("kek-1")) as store:
        filled = fill(store)
        extra = store.create_run()
        for step in range(1, 301):
            store.commit(extra.run_id, {"n": step, "s": SECRET}, step=step)
        states = {
            i.step: store.state_at(extra.run_id, i.step).state for i in store.steps(extra.run_id)
        }
    old = set(data_keys(sqlite_url))
    env = {**os.environ, "TEST_KEYS": key_text("kek-2", "kek-1"), "PYTHONPATH": str(ROOT / "src")}
    argv = [
        sys.executable,
        "-m",
        "agentckpt",
        "keys",
        "rotate",
        "--reencrypt",
        "--batch",
        "1",
        "--url",
        sqlite_url,
        "--keys",
        "env:TEST_KEYS",
    ]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        # Kill it inside the steps table, after it rewrote some values.
        if line.startswith("steps:") and int(line.split(",")[1].split()[0]) >= 20:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    keys = data_keys(sqlite_url)
    [target] = set(keys) - old
    assert {target} < sealed_key_ids(sqlite_url)  # halfway: old and new keys in use
    # Every value reads back whole meanwhile, old keys readable until the rotation ends.
    with Store.connect(sqlite_url, encryption=encryption("kek-2", "kek-1")) as store:
        check_reads(store, filled)
        for step, state in states.items():
            assert store.state_at(extra.run_id, step).state == state
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert set(data_keys(sqlite_url)) == old | {target}  # carried on: no third key
    assert sealed_key_ids(sqlite_url) == {target}
    assert all(data_keys(sqlite_url)[k][1] == "retired" for k in old)
    with Store.connect(sqlite_url, encryption=encryption("kek-2")) as store:
        check_reads(store, filled)
        for step, state in states.items():
            assert store.state_at(extra.run_id, step).state == state


def test_reading_a_value_under_a_key_made_by_another_process(sqlite_url: str) -> None:
    """A store loads the data keys made after it opened (by a rotation) when it meets one."""
    with Store.connect(sqlite_url, encryption=encryption("kek-1", "kek-2")) as reader:
        run = reader.create_run()
        with Store.connect(sqlite_url, encryption=encryption("kek-2", "kek-1")) as writer:
            writer.commit(run.run_id, {"s": SECRET})
        assert reader.latest(run.run_id).state == {"s": SECRET}  # type: ignore[union-attr]
    # A store without kek-2 cannot: a typed error, not corrupt data.
    with (
        Store.connect(sqlite_url, encryption=encryption("kek-1")) as store,
        pytest.raises(KeyUnavailableError),
    ):
        store.latest(run.run_id)


def test_reencrypt_seals_what_was_written_before_encryption(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.connect(url) as store:
        filled = fill(store)
    with Store.connect(url, encryption=encryption("kek-1", metadata=True)) as store:
        check_reads(store, filled)  # clear rows read beside the new data key
    monkeypatch.setenv("TEST_KEYS", key_text("kek-1"))
    keyed = f"{url}{'&' if '?' in url else '?'}encryption=env:TEST_KEYS&encrypt_metadata=true"
    code, _, err = cli(capsys, "keys", "rotate", "--reencrypt", "--url", keyed)
    assert code == 0, err
    [(key_id, _)] = [(k, v) for k, v in data_keys(url).items() if v[1] == "active"]
    assert sealed_key_ids(url) == {key_id}
    for table in ("steps", "blobs", "history", "effects"):
        assert all(c.endswith("+sealed") for (c,) in raw_sql(url, f"SELECT codec FROM {table}"))
    for (metadata,) in raw_sql(url, "SELECT metadata FROM runs"):
        assert SECRET not in str(metadata)
    with Store.connect(url, encryption=encryption("kek-1")) as store:
        check_reads(store, filled)
