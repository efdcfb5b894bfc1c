"""Blobs in S3 (a real S3-compatible server, moto over HTTP) are sealed before upload."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import CorruptDataError, Store
from agentckpt.runs.artifacts import Artifacts
from agentckpt.runs.offload import OffloadPolicy
from tests.integration.crypto.support import SECRET, encryption, leaks


def objects(s3_store: Any) -> dict[str, bytes]:
    client, bucket = s3_store.client, s3_store.bucket
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}


def test_s3_holds_only_sealed_blobs_and_a_changed_byte_is_refused(
    sqlite_url: str, s3_store: Any
) -> None:
    policy = OffloadPolicy(threshold=1024)
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        run = store.create_run()
        artifacts = Artifacts(store, run.run_id, s3_store, policy)
        state, pending = artifacts.prepare({"report": SECRET * 100})
        artifacts.persist(pending, set())
        store.commit(run.run_id, state)
    stored = objects(s3_store)
    assert len(stored) == 1
    [(key, data)] = stored.items()
    assert data[:3] == b"\xa7CK"
    assert not leaks(data)
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        fresh = Artifacts(store, run.run_id, s3_store, policy)
        assert fresh.load(state["report"]) == SECRET * 100
    changed = bytearray(data)
    changed[len(changed) // 2] ^= 1
    s3_store.client.put_object(Bucket=s3_store.bucket, Key=key, Body=bytes(changed))
    with Store.connect(sqlite_url, encryption=encryption()) as store:
        fresh = Artifacts(store, run.run_id, s3_store, policy)
        with pytest.raises(CorruptDataError):
            fresh.load(state["report"])
