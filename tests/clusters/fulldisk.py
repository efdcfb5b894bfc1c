"""Clusters whose data directory, or whose WAL directory, is on a small tmpfs.

The two fail differently, which is why there are two:

- **data directory full** (:func:`datadir_on_tmpfs`): a statement that must extend a table
  or index, or write a temporary file, fails with ``ERROR 53100`` ("could not extend
  file ...: No space left on device"); the server stays up and works again once space is
  freed. ``pg_wal`` is kept *off* the tmpfs here (``initdb --waldir`` on the normal
  disk), as on a server with a separate WAL volume; otherwise whichever of the table or
  the next WAL segment hits the limit first would decide between this ERROR and the
  PANIC below, and the test would be a coin toss.
- **WAL directory full** (:func:`waldir_on_tmpfs`): creating the next WAL segment fails
  inside a critical section, so the backend PANICs (the client gets 53100 and a closed
  connection), the postmaster restarts, crash recovery cannot write its end-of-recovery
  checkpoint either, and the server shuts down. After space is freed, :meth:`start
  <tests.clusters.cluster.PgCluster.start>` recovers it with every committed row.

Both return a *stopped-or-started* :class:`~tests.clusters.cluster.PgCluster` with a
``tmpfs`` attribute (:class:`~tests.clusters.tmpfs.Tmpfs`), unmounted by its cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping

from .cluster import PgCluster, Setting
from .tmpfs import MiB, Tmpfs

# initdb's data directory is about 23 MiB without pg_wal; this leaves ~25 MiB to fill.
DATA_TMPFS_SIZE = 48 * MiB
# Room for the first 16 MiB WAL segment and a few more: fill() gets it to the edge.
WAL_TMPFS_SIZE = 64 * MiB


class TmpfsCluster(PgCluster):
    """A :class:`PgCluster` with one directory on :attr:`tmpfs`."""

    tmpfs: Tmpfs


def _mount(cluster: TmpfsCluster, mountpoint_name: str, size: int) -> Tmpfs:
    try:
        fs = Tmpfs(cluster.base / mountpoint_name, size, cluster.run_as)
    except Exception:
        cluster.cleanup()
        raise
    cluster.tmpfs = fs
    cluster.add_cleanup(fs.unmount)
    return fs


def datadir_on_tmpfs(
    name: str = "datafs",
    *,
    size: int = DATA_TMPFS_SIZE,
    settings: Mapping[str, Setting] | None = None,
    start: bool = True,
) -> TmpfsCluster:
    """A cluster whose data directory is on a ``size``-byte tmpfs, WAL on the normal disk."""
    cluster = TmpfsCluster(name, settings=settings)
    fs = _mount(cluster, "datafs", size)
    cluster.datadir = fs.path / "data"
    cluster.waldir = cluster.base / "wal"
    return _ready(cluster, start)


def waldir_on_tmpfs(
    name: str = "walfs",
    *,
    size: int = WAL_TMPFS_SIZE,
    settings: Mapping[str, Setting] | None = None,
    start: bool = True,
) -> TmpfsCluster:
    """A cluster whose ``pg_wal`` is on a ``size``-byte tmpfs (``initdb --waldir``)."""
    cluster = TmpfsCluster(name, settings=settings)
    fs = _mount(cluster, "walfs", size)
    cluster.waldir = fs.path / "pg_wal"
    return _ready(cluster, start)


def _ready(cluster: TmpfsCluster, start: bool) -> TmpfsCluster:
    try:
        cluster.init()
        if start:
            cluster.start()
    except Exception:
        cluster.cleanup(keep_logs=True)
        raise
    return cluster
