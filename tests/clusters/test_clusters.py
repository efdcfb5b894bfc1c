"""Smoke tests: each cluster fixture starts real servers that behave as documented.

They use no agentckpt code: they prove the infrastructure, so that tests of agentckpt on
Citus, behind PgBouncer, across a failover or on a full disk can rely on it.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors

from .citus import CitusCluster
from .cluster import ClusterError, PgCluster
from .fixtures import unavailable
from .fulldisk import TmpfsCluster, datadir_on_tmpfs
from .pgbouncer import PgBouncer
from .replication import ReplicatedPair
from .tmpfs import MiB, TmpfsError

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


@pytest.fixture
def schema(request: pytest.FixtureRequest) -> str:
    """A fresh schema name for one test (created and dropped by the test)."""
    return f"t_{uuid.uuid4().hex[:10]}"


def _explain(cluster: PgCluster, query: str, params: list[Any]) -> str:
    return "\n".join(str(row[0]) for row in cluster.sql(f"EXPLAIN {query}", params))


# ------------------------------------------------------------------------ plain


def test_pg_cluster_is_private_and_local(pg_cluster: PgCluster) -> None:
    assert pg_cluster.scalar("SHOW listen_addresses") == "127.0.0.1"
    assert pg_cluster.scalar("SHOW unix_socket_directories") == str(pg_cluster.base)
    assert (pg_cluster.base / f".s.PGSQL.{pg_cluster.port}").is_socket()
    assert pg_cluster.scalar("SHOW fsync") == "off"
    assert pg_cluster.scalar("SELECT current_user") == "postgres"
    with psycopg.connect(pg_cluster.dsn) as conn:
        assert conn.info.port == pg_cluster.port


# ------------------------------------------------------------------------ Citus


@pytest.fixture
def citus_schema(citus_cluster: CitusCluster, schema: str) -> Iterator[str]:
    """A schema on the Citus cluster (propagated to the workers), dropped afterwards."""
    citus_cluster.coordinator.sql(f"CREATE SCHEMA {schema}")
    yield schema
    citus_cluster.coordinator.sql(f"DROP SCHEMA {schema} CASCADE")


def test_citus_distributes_colocated_tables_over_both_workers(
    citus_cluster: CitusCluster, citus_schema: str
) -> None:
    co, s = citus_cluster.coordinator, citus_schema
    assert citus_cluster.active_workers() == sorted(
        ("127.0.0.1", p) for p in citus_cluster.worker_ports
    )
    co.sql(f"CREATE TABLE {s}.runs (id uuid PRIMARY KEY, name text NOT NULL)")
    co.sql(f"CREATE TABLE {s}.steps (run_id uuid, n int, PRIMARY KEY (run_id, n))")
    co.sql("SELECT create_distributed_table(%s, 'id')", [f"{s}.runs"])
    co.sql(
        "SELECT create_distributed_table(%s, 'run_id', colocate_with => %s)",
        [f"{s}.steps", f"{s}.runs"],
    )
    colocation = co.sql(
        "SELECT DISTINCT colocationid FROM pg_dist_partition WHERE logicalrelid IN (%s::regclass,"
        " %s::regclass)",
        [f"{s}.runs", f"{s}.steps"],
    )
    assert len(colocation) == 1

    ids = [uuid.uuid4() for _ in range(20)]
    with co.connect() as conn:
        for run_id in ids:
            conn.execute(f"INSERT INTO {s}.runs VALUES (%s, 'r')", [run_id])
            conn.execute(f"INSERT INTO {s}.steps VALUES (%s, 1), (%s, 2)", [run_id, run_id])

    # Count the rows in the shard tables on each worker itself, not through Citus.
    per_worker = {}
    for worker in citus_cluster.workers:
        shards = co.sql(
            "SELECT shardid FROM citus_shards WHERE table_name = %s::regclass AND nodeport = %s",
            [f"{s}.runs", worker.port],
        )
        assert shards, f"no shard of runs on {worker.name}"
        per_worker[worker.name] = sum(
            worker.scalar(f"SELECT count(*) FROM {s}.runs_{shard}") for (shard,) in shards
        )
    assert sum(per_worker.values()) == len(ids)
    assert all(count > 0 for count in per_worker.values()), per_worker

    # A lookup by the distribution column goes to exactly one shard, and so does a join
    # of the co-located tables on it.
    plan = _explain(co, f"SELECT * FROM {s}.runs WHERE id = %s", [ids[0]])
    assert "Task Count: 1" in plan, plan
    join = _explain(
        co,
        f"SELECT * FROM {s}.runs r JOIN {s}.steps st ON st.run_id = r.id WHERE r.id = %s",
        [ids[0]],
    )
    assert "Task Count: 1" in join, join
    assert co.scalar(f"SELECT count(*) FROM {s}.steps") == 2 * len(ids)


def test_citus_worker_can_be_killed_and_restarted(
    citus_cluster: CitusCluster, citus_schema: str
) -> None:
    co, s = citus_cluster.coordinator, citus_schema
    co.sql(f"CREATE TABLE {s}.t (id uuid PRIMARY KEY)")
    co.sql("SELECT create_distributed_table(%s, 'id')", [f"{s}.t"])
    co.sql(f"INSERT INTO {s}.t SELECT gen_random_uuid() FROM generate_series(1, 50)")
    worker = citus_cluster.workers[0]
    worker.kill()
    try:
        with pytest.raises(psycopg.OperationalError, match="connection to the remote node"):
            co.sql(f"SELECT count(*) FROM {s}.t")
    finally:
        worker.start()
    assert co.scalar(f"SELECT count(*) FROM {s}.t") == 50


# ------------------------------------------------------------------------ PgBouncer


def _pool(bouncer: PgBouncer) -> dict[str, Any]:
    pools = [p for p in bouncer.show("POOLS") if p["database"] == "postgres"]
    assert len(pools) == 1, pools
    return pools[0]


def test_pgbouncer_pools_per_transaction(
    pgbouncer: PgBouncer, pg_cluster: PgCluster, schema: str
) -> None:
    config = {row["key"]: row["value"] for row in pgbouncer.show("CONFIG")}
    assert config["pool_mode"] == "transaction"
    pg_cluster.sql(f"CREATE SCHEMA {schema}")
    try:
        pg_cluster.sql(f"CREATE TABLE {schema}.t (who text)")
        with (
            psycopg.connect(pgbouncer.url, autocommit=True) as a,
            psycopg.connect(pgbouncer.url, autocommit=True) as b,
        ):
            a.execute("BEGIN")
            a.execute(f"INSERT INTO {schema}.t VALUES ('a')")
            b.execute("BEGIN")
            b.execute(f"INSERT INTO {schema}.t VALUES ('b')")
            # Two open transactions hold two server connections...
            assert _pool(pgbouncer)["sv_active"] == 2
            a.execute("COMMIT")
            b.execute("COMMIT")
            # ...and give them back at COMMIT, though both clients are still connected
            # (in session mode each client would keep its server connection).
            assert _pool(pgbouncer)["sv_active"] == 0
            assert _pool(pgbouncer)["cl_active"] + _pool(pgbouncer)["cl_waiting"] >= 2
        rows = pg_cluster.sql(f"SELECT who FROM {schema}.t ORDER BY who")
        assert rows == [("a",), ("b",)]
    finally:
        pg_cluster.sql(f"DROP SCHEMA {schema} CASCADE")


def test_pgbouncer_breaks_server_side_prepared_statements(make_pgbouncer: Any) -> None:
    # One server connection for all clients makes the sharing visible and deterministic.
    bouncer: PgBouncer = make_pgbouncer(pool_size=1)
    with (
        psycopg.connect(bouncer.url, autocommit=True) as a,
        psycopg.connect(bouncer.url, autocommit=True) as b,
    ):
        pid_a = a.execute("SELECT pg_backend_pid()").fetchone()
        pid_b = b.execute("SELECT pg_backend_pid()").fetchone()
        assert pid_a == pid_b  # two clients, one server session: transaction pooling

        # psycopg names its prepared statements _pg3_0, _pg3_1... per client connection,
        # so the second client's first one collides on the shared server connection.
        # (PgBouncer >= 1.21 with max_prepared_statements would translate the names.)
        a.execute("SELECT 1 + %s", [1], prepare=True)
        with pytest.raises(errors.DuplicatePreparedStatement, match='"_pg3_0" already exists'):
            b.execute("SELECT 2 + %s", [1], prepare=True)

    # The fix for PgBouncer 1.18: never prepare (prepare_threshold=None).
    with (
        psycopg.connect(bouncer.url, autocommit=True, prepare_threshold=None) as a,
        psycopg.connect(bouncer.url, autocommit=True, prepare_threshold=None) as b,
    ):
        for i in range(10):  # past psycopg's default threshold of 5
            assert a.execute("SELECT 1 + %s", [i]).fetchone() == (1 + i,)
            assert b.execute("SELECT 2 + %s", [i]).fetchone() == (2 + i,)


# ------------------------------------------------------------------------ replication


def _commit_while_standby_is_down(pair: ReplicatedPair, query: str) -> tuple[float, list[str]]:
    """Run ``query`` on the primary; cancel it once it waits for the sync standby.

    Returns how long it ran and the warnings the server sent.
    """
    warnings: list[str] = []
    errors_seen: list[BaseException] = []
    with psycopg.connect(pair.primary.url, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: warnings.append(f"{d.severity}: {d.message_primary}"))
        # statement_timeout does not bound this wait: PostgreSQL disables it before the
        # commit (finish_xact_command), so only a cancel ends it.
        conn.execute("SET statement_timeout = '200ms'")
        pid = conn.info.backend_pid

        def run() -> None:
            try:
                conn.execute(query)
            except BaseException as exc:  # reported below, in the test's thread
                errors_seen.append(exc)

        started = time.monotonic()
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 10
        while pair.primary.scalar(
            "SELECT wait_event IS DISTINCT FROM 'SyncRep' FROM pg_stat_activity WHERE pid = %s",
            [pid],
        ):
            assert time.monotonic() < deadline, "the commit never waited for the standby"
            time.sleep(0.02)
        time.sleep(0.5)  # well past statement_timeout: still waiting
        assert worker.is_alive()
        conn.cancel_safe()
        worker.join(10)
        elapsed = time.monotonic() - started
    assert not errors_seen, errors_seen
    return elapsed, warnings


def test_sync_standby_confirms_commits_and_a_stopped_one_makes_them_wait(
    pg_sync_pair: ReplicatedPair,
) -> None:
    primary, standby = pg_sync_pair.primary, pg_sync_pair.standby
    assert pg_sync_pair.replication_state() == ("streaming", "sync")
    assert primary.scalar("SHOW synchronous_commit") == "on"
    assert standby.in_recovery()
    primary.sql("CREATE TABLE t (n int)")
    primary.sql("INSERT INTO t VALUES (1)")
    # synchronous_commit=on waits for the standby's flush, not its replay.
    pg_sync_pair.wait_replayed()
    assert standby.sql("SELECT n FROM t") == [(1,)]

    pg_sync_pair.stop_standby()
    elapsed, warnings = _commit_while_standby_is_down(pg_sync_pair, "INSERT INTO t VALUES (2)")
    assert elapsed > 0.5
    assert "WARNING: canceling wait for synchronous replication due to user request" in warnings
    # The cancel did not undo it: the transaction had committed locally.
    assert primary.sql("SELECT n FROM t ORDER BY n") == [(1,), (2,)]

    pg_sync_pair.start_standby()
    pg_sync_pair.wait_replayed()
    assert standby.sql("SELECT n FROM t ORDER BY n") == [(1,), (2,)]


def test_standby_promoted_after_primary_sigkill_has_the_commits(
    pg_sync_pair: ReplicatedPair,
) -> None:
    primary, standby = pg_sync_pair.primary, pg_sync_pair.standby
    with psycopg.connect(pg_sync_pair.url) as conn:
        assert conn.info.port == primary.port
    primary.sql("CREATE TABLE t (n int)")
    primary.sql("INSERT INTO t SELECT generate_series(1, 100)")
    with pytest.raises(errors.ReadOnlySqlTransaction):
        standby.sql("INSERT INTO t VALUES (0)")

    primary.kill()
    assert not primary.running
    with pytest.raises(psycopg.OperationalError):
        primary.sql("SELECT 1")
    standby.promote()

    assert not standby.in_recovery()
    # Every commit the sync primary acknowledged is on the new primary, replayed at
    # promotion even if not yet visible on the standby when the primary died.
    assert standby.scalar("SELECT count(*) FROM t") == 100
    standby.sql("INSERT INTO t VALUES (101)")
    with psycopg.connect(pg_sync_pair.url) as conn:
        assert conn.info.port == standby.port
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,)


def test_async_standby_lags_when_cut_and_catches_up(pg_async_pair: ReplicatedPair) -> None:
    primary, standby = pg_async_pair.primary, pg_async_pair.standby
    assert pg_async_pair.replication_state() == ("streaming", "async")
    primary.sql("CREATE TABLE t (n int)")
    primary.sql("INSERT INTO t VALUES (1)")
    pg_async_pair.wait_replayed()

    pg_async_pair.cut()
    primary.sql("INSERT INTO t VALUES (2)")  # returns at once: nobody waits for the standby
    time.sleep(0.3)
    assert standby.sql("SELECT n FROM t") == [(1,)]  # up, readable, behind

    pg_async_pair.reconnect()
    pg_async_pair.wait_replayed()
    assert standby.sql("SELECT n FROM t ORDER BY n") == [(1,), (2,)]


def test_frozen_primary_hangs_then_thaws(pg_async_pair: ReplicatedPair) -> None:
    primary, standby = pg_async_pair.primary, pg_async_pair.standby
    pids = primary.freeze()
    try:
        assert primary.postmaster_pid in pids
        assert len(pids) > 3  # the postmaster and its backends
        started = time.monotonic()
        # (2 s is libpq's least connect_timeout: it raises smaller values to 2.)
        with pytest.raises(psycopg.OperationalError, match="timeout"):
            psycopg.connect(primary.url_for(connect_timeout=2)).close()
        assert time.monotonic() - started >= 1.9  # it hung: a refused connection is instant
        assert standby.scalar("SELECT 1") == 1
    finally:
        primary.thaw()
    assert primary.scalar("SELECT 1") == 1


# ------------------------------------------------------------------------ full disks


def test_full_data_directory_fails_statements_until_space_is_freed(
    pg_datadir_tmpfs: TmpfsCluster,
) -> None:
    cluster, fs = pg_datadir_tmpfs, pg_datadir_tmpfs.tmpfs
    assert cluster.scalar("SHOW data_directory").startswith(str(fs.path))
    cluster.sql("CREATE TABLE t (x text)")
    fs.fill(leave=2 * MiB)
    fill = "INSERT INTO t SELECT repeat('x', 1000) FROM generate_series(1, 5000)"  # ~5 MiB
    with pytest.raises(errors.DiskFull, match="could not extend file") as info:
        cluster.sql(fill)
    assert info.value.sqlstate == "53100"
    assert cluster.running
    assert cluster.scalar("SELECT count(*) FROM t") == 0

    fs.free()
    cluster.sql(fill)
    assert cluster.scalar("SELECT count(*) FROM t") == 5000


def test_full_wal_directory_stops_the_server_until_space_is_freed(
    pg_waldir_tmpfs: TmpfsCluster,
) -> None:
    cluster, fs = pg_waldir_tmpfs, pg_waldir_tmpfs.tmpfs
    assert os.path.realpath(cluster.datadir / "pg_wal") == str(fs.path / "pg_wal")
    cluster.sql("CREATE TABLE t (x text)")
    cluster.sql("INSERT INTO t VALUES ('committed')")
    fs.fill(leave=2 * MiB)
    # ~20 MiB of WAL: more than the current 16 MiB segment, so a new one must be made.
    with pytest.raises(psycopg.Error) as info:
        cluster.sql("INSERT INTO t SELECT repeat('x', 1000) FROM generate_series(1, 20000)")
    assert info.value.sqlstate in ("53100", None), info.value  # None: connection lost first
    deadline = time.monotonic() + 20
    while cluster.running:  # PANIC, restart, recovery cannot write WAL either: shut down
        assert time.monotonic() < deadline, cluster.log_tail()
        time.sleep(0.05)
    assert "PANIC:  could not write to file" in cluster.log_path.read_text()

    fs.free()
    cluster.start()  # crash recovery
    assert cluster.sql("SELECT x FROM t") == [("committed",)]


def test_cleanup_stops_everything_even_frozen_and_unmounts() -> None:
    try:
        cluster = datadir_on_tmpfs("cleanup", size=48 * MiB)
    except (TmpfsError, ClusterError) as exc:
        unavailable("datadir_on_tmpfs", str(exc))
    pids = cluster.freeze()
    base, mount = cluster.base, cluster.tmpfs.path
    cluster.cleanup()
    assert not base.exists()
    assert all(not os.path.exists(f"/proc/{pid}") for pid in pids)
    assert str(mount) not in Path("/proc/self/mounts").read_text()
