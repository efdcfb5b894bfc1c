"""Full disks: a commit that cannot be written is a typed error, what was acknowledged
before stays intact, and once space is back the same store commits again."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentckpt import (
    OutcomeUnknownError,
    SnapshotPolicy,
    StorageFullError,
    Store,
    UnavailableError,
)
from tests.clusters.binaries import RunAs, tmpfs_reason
from tests.clusters.fixtures import unavailable
from tests.clusters.fulldisk import TmpfsCluster
from tests.clusters.tmpfs import MiB, Tmpfs

pytestmark = [pytest.mark.fault, pytest.mark.timeout(150)]

KEEP_ALL = SnapshotPolicy(prune=False, interval=1)


def big(n: int, size: int = 256 * 1024) -> dict[str, Any]:
    """A state of about ``size`` bytes that does not compress."""
    return {"n": n, "blob": os.urandom(size // 2).hex()}


def commit_until_full(store: Store, run_id: Any, first: int) -> tuple[int, list[Any]]:
    """Commit big states until one fails; the last acknowledged step, and the states."""
    acked: list[Any] = []
    for n in range(first, first + 400):
        value = big(n)
        try:
            store.commit(run_id, value, step=n)
        except StorageFullError:
            return n - 1, acked
        acked.append(value)
    raise AssertionError("the disk never filled up")


def test_a_full_data_directory_is_storage_full_and_the_same_store_goes_on(
    pg_datadir_tmpfs: TmpfsCluster,
) -> None:
    cluster, fs = pg_datadir_tmpfs, pg_datadir_tmpfs.tmpfs
    with Store.connect(cluster.url, policy=KEEP_ALL, outage_limit=0) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 0}, step=0)
        fs.fill(leave=2 * MiB)
        last, states = commit_until_full(store, run.run_id, 1)
        assert cluster.running  # an ERROR, not a crash
        # Every acknowledged step is intact.
        for n, value in enumerate(states, start=1):
            assert store.state_at(run.run_id, n).state == value
        assert store.latest(run.run_id).step == last  # type: ignore[union-attr]

        fs.free()
        retry = big(last + 1)
        assert store.commit(run.run_id, retry, step=last + 1).step == last + 1
        assert store.latest(run.run_id).state == retry  # type: ignore[union-attr]


def test_a_full_wal_directory_is_a_typed_outage_and_nothing_acknowledged_is_lost(
    pg_waldir_tmpfs: TmpfsCluster,
) -> None:
    cluster, fs = pg_waldir_tmpfs, pg_waldir_tmpfs.tmpfs
    seen: list[type[BaseException]] = []
    with Store.connect(
        cluster.url, policy=KEEP_ALL, outage_limit=0, deadline=5.0, wait=1.0
    ) as store:
        run = store.create_run()
        acked: dict[int, Any] = {}
        fs.fill(leave=2 * MiB)
        n = 0
        # The WAL fills, the server PANICs and, unable to recover, shuts down.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            n += 1
            value = big(n)
            try:
                store.commit(run.run_id, value, step=n)
                acked[n] = value
            except (StorageFullError, OutcomeUnknownError, UnavailableError) as exc:
                seen.append(type(exc))
                if not cluster.running:
                    break
                n -= 1
        assert not cluster.running, cluster.log_tail()
        # While it is down, every call is a typed outage error (never a driver error).
        with pytest.raises((UnavailableError, OutcomeUnknownError)):
            store.commit(run.run_id, big(n), step=n)
        with pytest.raises(UnavailableError):
            store.latest(run.run_id)

        fs.free()
        cluster.start()
        # The same store, no restart: the commit of unknown outcome is retried as is.
        retry = big(n)
        assert store.commit(run.run_id, retry, step=n).step == n
        for step, value in acked.items():
            assert store.state_at(run.run_id, step).state == value
    print(f"full WAL directory: acked={len(acked)} errors={[e.__name__ for e in seen]}")
    assert seen


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Tmpfs]:
    reason = tmpfs_reason()
    if reason is not None:
        unavailable("small_tmpfs", reason)
    fs = Tmpfs(tmp_path / "fs", 16 * MiB, RunAs("root", os.getuid(), os.getgid()))
    try:
        yield fs
    finally:
        fs.unmount()


def test_a_sqlite_file_on_a_full_disk_is_storage_full_and_the_file_stays_intact(
    small_tmpfs: Tmpfs,
) -> None:
    path = small_tmpfs.path / "agent.db"
    with Store.connect(f"sqlite:///{path}", policy=KEEP_ALL) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 0}, step=0)
        small_tmpfs.fill(leave=2 * MiB)
        last, states = commit_until_full(store, run.run_id, 1)
        for n, value in enumerate(states, start=1):
            assert store.state_at(run.run_id, n).state == value
        small_tmpfs.free()
        assert store.commit(run.run_id, big(last + 1), step=last + 1).step == last + 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
