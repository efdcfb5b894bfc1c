"""``CitusCluster``: a Citus coordinator and N workers, each a :class:`PgCluster`.

Every node has ``shared_preload_libraries = 'citus'`` and ``CREATE EXTENSION citus`` in
the ``postgres`` database; the coordinator knows itself
(``citus_set_coordinator_host``) and every worker (``citus_add_node``). Connect to
:attr:`CitusCluster.url` (the coordinator) and distribute tables with
``create_distributed_table``; :attr:`CitusCluster.worker_urls` reach the workers
directly, where the shards live as ``<table>_<shardid>``.

Citus must be installed for the PostgreSQL found (``scripts/install-citus.sh``).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from .binaries import citus_reason
from .cluster import ClusterError, PgCluster, Setting, require_binaries

CITUS_SETTINGS: dict[str, Setting] = {
    "shared_preload_libraries": "citus",
    # Citus's default is 32 shards per table; 4 (two per worker) still spreads rows over
    # both workers and makes every create_distributed_table eight times cheaper.
    "citus.shard_count": 4,
    # Citus's default node_conninfo is sslmode=require, and CREATE EXTENSION would then
    # make a self-signed certificate on every node; loopback tests need no TLS.
    "citus.node_conninfo": "sslmode=disable",
}


class CitusCluster:
    """A running coordinator and workers; :attr:`nodes` lists them, coordinator first."""

    def __init__(self, coordinator: PgCluster, workers: list[PgCluster]) -> None:
        self.coordinator = coordinator
        self.workers = workers

    def __repr__(self) -> str:
        return f"<CitusCluster coordinator={self.coordinator.port} workers={self.worker_ports}>"

    def __enter__(self) -> CitusCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup(keep_logs=exc[0] is not None)

    @property
    def nodes(self) -> list[PgCluster]:
        """The coordinator, then the workers."""
        return [self.coordinator, *self.workers]

    @property
    def url(self) -> str:
        """The coordinator's URL: where applications connect."""
        return self.coordinator.url

    @property
    def worker_urls(self) -> list[str]:
        """Each worker's URL, for looking at shards directly."""
        return [w.url for w in self.workers]

    @property
    def worker_ports(self) -> list[int]:
        """Each worker's port (``citus_shards.nodeport`` names workers by it)."""
        return [w.port for w in self.workers]

    def active_workers(self) -> list[tuple[str, int]]:
        """``(host, port)`` of the workers the coordinator considers active."""
        rows = self.coordinator.sql("SELECT * FROM citus_get_active_worker_nodes()")
        return sorted((str(h), int(p)) for h, p in rows)

    def cleanup(self, *, keep_logs: bool | None = None) -> None:
        """Clean up every node (workers first); never raises."""
        for node in reversed(self.nodes):
            node.cleanup(keep_logs=keep_logs)

    @property
    def had_failure(self) -> bool:
        """True when a test using this cluster failed (the pytest plugin marks it)."""
        return any(n.had_failure for n in self.nodes)

    @had_failure.setter
    def had_failure(self, value: bool) -> None:
        for node in self.nodes:
            node.had_failure = value


def _boot(node: PgCluster) -> None:
    node.init().start()
    node.sql("CREATE EXTENSION citus")


def start_citus(
    name: str = "citus",
    *,
    workers: int = 2,
    settings: Mapping[str, Setting] | None = None,
    durable: bool = False,
) -> CitusCluster:
    """Start a coordinator ``<name>-coordinator`` and ``workers`` workers
    ``<name>-worker1..N``, all in parallel, and join them into one Citus cluster."""
    binaries = require_binaries()
    reason = citus_reason(binaries)
    if reason is not None:
        raise ClusterError(reason)
    merged = {**CITUS_SETTINGS, **(settings or {})}
    names = [f"{name}-coordinator", *(f"{name}-worker{i}" for i in range(1, workers + 1))]
    nodes = [PgCluster(n, settings=merged, durable=durable, binaries=binaries) for n in names]
    cluster = CitusCluster(nodes[0], nodes[1:])
    try:
        # initdb and CREATE EXTENSION are CPU-bound; two cores run two nodes at once.
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            for future in [pool.submit(_boot, n) for n in nodes]:
                future.result()
        coordinator = cluster.coordinator
        coordinator.sql(
            "SELECT citus_set_coordinator_host(%s, %s)", [coordinator.host, coordinator.port]
        )
        for worker in cluster.workers:
            coordinator.sql("SELECT citus_add_node(%s, %s)", [worker.host, worker.port])
    except BaseException:
        cluster.cleanup(keep_logs=True)
        raise
    return cluster
