"""Real multi-node PostgreSQL setups for the tests: Citus, PgBouncer, replicas, full disks.

Everything runs from the installed binaries, on 127.0.0.1 and free ports, in temporary
directories, and is stopped and removed at the end. The pytest fixtures are in
:mod:`tests.clusters.fixtures`; README.md in this directory is the guide.
"""

from __future__ import annotations

from .citus import CitusCluster, start_citus
from .cluster import ClusterError, PgCluster
from .fulldisk import TmpfsCluster, datadir_on_tmpfs, waldir_on_tmpfs
from .pgbouncer import PgBouncer
from .replication import ReplicatedPair, make_standby, start_pair
from .tmpfs import Tmpfs

__all__ = [
    "CitusCluster",
    "ClusterError",
    "PgBouncer",
    "PgCluster",
    "ReplicatedPair",
    "Tmpfs",
    "TmpfsCluster",
    "datadir_on_tmpfs",
    "make_standby",
    "start_citus",
    "start_pair",
    "waldir_on_tmpfs",
]
