"""Group commit on Citus: a batch is one transaction per worker, never a two-phase commit;
a run's writes land together or not at all; a worker killed mid-batch loses no
acknowledged commit."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row

from agentckpt import AsyncStore, Store
from agentckpt._backends.postgres import SET_TENANT
from agentckpt._backends.routing import ShardRouter
from agentckpt._backends.sql import load_queries
from agentckpt._core.writes import BlobRow, Committed
from agentckpt.tenancy.names import DEFAULT_TENANT
from tests.clusters.citus import CitusCluster
from tests.scale.citus.conftest import SCHEMA
from tests.support.writes import step_write


def _router_conn(url: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(url.split("?")[0], autocommit=True, row_factory=dict_row)
    conn.execute(f"SET search_path = {SCHEMA}")
    return conn


def _new_runs(url: str, count: int) -> list[uuid.UUID]:
    with Store.connect(url) as store:
        return [store.create_run().run_id for _ in range(count)]


def test_a_batch_is_one_single_worker_transaction_per_worker(
    citus_cluster: CitusCluster, url: str
) -> None:
    runs = _new_runs(url, 12)
    remote: list[str] = []
    with _router_conn(url) as conn:
        conn.execute("SET citus.log_remote_commands = on")
        conn.execute("SET client_min_messages = log")
        conn.add_notice_handler(
            lambda d: remote.append(f"{d.message_primary} {d.message_detail or ''}")
        )
        router = ShardRouter(load_queries("postgres"), SET_TENANT, {"tenant": DEFAULT_TENANT})
        parts = router.parts(conn, [step_write(r) for r in runs])
        outcomes = router.commit(conn, [step_write(r) for r in runs])
    assert len(parts) == 2, "12 runs hash to both workers"
    assert all(isinstance(o, Committed) for o in outcomes)
    assert not [line for line in remote if "PREPARE TRANSACTION" in line]
    commits = [line for line in remote if line.startswith("issuing COMMIT")]
    assert len(commits) == 2, remote
    # Between a BEGIN and its COMMIT, every command goes to one server.
    servers: set[str] = set()
    for line in remote:
        match = re.search(r"on server \S+@(\S+) ", line)
        if match:
            servers.add(match[1])
        if line.startswith("issuing COMMIT"):
            assert len(servers) == 1, servers
            servers = set()


def test_a_failing_write_undoes_its_workers_part_and_only_that(
    citus_cluster: CitusCluster, url: str
) -> None:
    runs = _new_runs(url, 12)
    with _router_conn(url) as conn:
        router = ShardRouter(load_queries("postgres"), SET_TENANT, {"tenant": DEFAULT_TENANT})
        writes = [
            step_write(r)._replace(blobs=(BlobRow(f"d{i}", "raw", 1, b"x"),))
            for i, r in enumerate(runs)
        ]
        parts = router.parts(conn, writes)
        # The last write of the last worker's part breaks the steps.kind CHECK after its
        # guard and blob went through: that part must roll back whole, and the part sent
        # before it (the other worker) stays committed.
        bad = parts[-1][-1]
        writes = [w._replace(kind="bogus") if w is bad else w for w in writes]
        try:
            router.commit(conn, writes)
        except psycopg.errors.CheckViolation:
            pass
        else:
            raise AssertionError("the bogus write was accepted")
        undone = {w.run_id for w in parts[-1]}
        rows = conn.execute(
            "SELECT r.run_id, r.head_step, (SELECT count(*) FROM blobs b "
            "WHERE b.run_id = r.run_id) AS blobs, (SELECT count(*) FROM steps s "
            "WHERE s.run_id = r.run_id) AS steps FROM runs r WHERE r.run_id = ANY(%s)",
            [runs],
        ).fetchall()
    assert len(rows) == 12
    for row in rows:
        landed = (row["head_step"], row["blobs"], row["steps"])
        if row["run_id"] in undone:
            assert landed == (None, 0, 0), row  # the whole part rolled back
        else:
            assert landed == (1, 1, 1), row  # the other worker's part is committed


def test_a_worker_killed_mid_batch_loses_no_acknowledged_commit(
    citus_cluster: CitusCluster, url: str
) -> None:
    victim = citus_cluster.workers[0]
    acknowledged: dict[uuid.UUID, int] = {}
    failures: list[str] = []
    spans: list[tuple[float, float]] = []  # (start, end) of every acknowledged commit
    outage: dict[str, float] = {}
    done = asyncio.Event()

    def state(step: int) -> dict[str, object]:
        return {"step": step, "pad": "x" * 200}

    async def writer(store: AsyncStore, run: uuid.UUID) -> None:
        # Until the worker is back and every writer has gone on past it, so that the kill
        # lands among commits however fast or slow this machine is.
        step = 1
        while not done.is_set():
            started = time.monotonic()
            try:
                await store.commit(run, state(step), step=step)
            except Exception as exc:  # the worker is down: retry the same commit
                failures.append(type(exc).__name__)
                await asyncio.sleep(0.05)
                continue
            spans.append((started, time.monotonic()))
            acknowledged[run] = step
            step += 1

    async def killer() -> None:
        await asyncio.sleep(0.3)
        outage["killed"] = time.monotonic()
        await asyncio.to_thread(victim.kill)
        await asyncio.sleep(0.5)
        await asyncio.to_thread(victim.start)
        outage["back"] = time.monotonic()
        await asyncio.sleep(0.3)
        done.set()

    async def main() -> None:
        async with await AsyncStore.connect(url, outage_limit=30.0, wait=10.0) as store:
            runs = [(await store.create_run()).run_id for _ in range(24)]
            await asyncio.gather(killer(), *(writer(store, r) for r in runs))

    started = time.monotonic()
    try:
        asyncio.run(main())
    finally:
        if not victim.running:
            victim.start()
    assert time.monotonic() - started < 60
    # The store rides out the outage (outage_limit): a commit in flight at the kill
    # either failed to the caller or waited and was acknowledged after it.
    ridden_out = [s for s in spans if s[0] < outage["killed"] < s[1]]
    assert failures or ridden_out, "the kill interrupted no commit: the test proved nothing"
    assert any(end > outage["back"] for _, end in spans), "no commit after the restart"
    assert len(acknowledged) == 24
    with Store.connect(url) as store:
        for run, step in acknowledged.items():
            latest = store.latest(run)
            assert latest is not None, run
            assert latest.step == step, (run, step)
            assert latest.state == state(step)
