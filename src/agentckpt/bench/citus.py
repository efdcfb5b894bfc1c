"""``agentckpt bench --backend citus``: the conversation and long-run workloads on a
Citus cluster beside one PostgreSQL server, in one run, and each worker's share of the
writes.

Both stores are agentckpt's own (``AsyncStore``), in a fresh schema each
(``<prefix>_citus_<workload>``), with the same pool size and workload:

- conversation: ``agents`` conversations at once, each ``turns`` turns of two commits
  (the user's message, then the reply of about 600 bytes), the state growing by both;
- long run: one run of ``steps`` sequential commits of a state of about 2 KiB whose one
  counter changes each step (each commit a small delta).

It prints commits per second and median/p99 commit latency for both, the ratio (single
server / Citus throughput, Citus / single server latency), and for Citus how many of the
conversation workload's commits each worker took (the spread should be within 10 % for
enough agents: runs hash to shards, shards spread over workers).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from agentckpt import AsyncStore

__all__ = ["CitusComparison", "compare", "render"]

REPLY = "The answer, with the reasoning that led to it. " * 12  # about 600 bytes


@dataclass(frozen=True, slots=True)
class Measured:
    """One workload on one store: commits, seconds, and commit latencies (ms)."""

    commits: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        """Commits per second."""
        return self.commits / self.seconds if self.seconds else 0.0


@dataclass(frozen=True, slots=True)
class CitusComparison:
    """Both workloads on both stores, and Citus's commits per worker (port -> count)."""

    single: dict[str, Measured]
    citus: dict[str, Measured]
    per_worker: dict[str, int]


def _measured(latencies: list[float], seconds: float) -> Measured:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
    return Measured(len(ordered), seconds, statistics.median(ordered) * 1e3, p99 * 1e3)


async def _conversations(url: str, agents: int, turns: int, pool: int) -> Measured:
    latencies: list[float] = []
    async with await AsyncStore.connect(url, pool_max=pool) as store:
        runs = [(await store.create_run(agent_id=f"agent{i}")).run_id for i in range(agents)]

        async def agent(run: uuid.UUID) -> None:
            messages: list[dict[str, str]] = []
            for turn in range(turns):
                for role, text in (("user", f"question {turn}"), ("assistant", REPLY)):
                    messages.append({"role": role, "content": text})
                    started = time.perf_counter()
                    await store.commit(run, {"messages": messages})
                    latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(agent(r) for r in runs))
        return _measured(latencies, time.perf_counter() - started)


async def _long_run(url: str, steps: int, pool: int) -> Measured:
    latencies: list[float] = []
    async with await AsyncStore.connect(url, pool_max=pool) as store:
        run = (await store.create_run(agent_id="long")).run_id
        state = {"notes": ["observation " * 8] * 20, "counter": 0}
        started = time.perf_counter()
        for step in range(steps):
            state["counter"] = step
            begun = time.perf_counter()
            await store.commit(run, state)
            latencies.append(time.perf_counter() - begun)
        return _measured(latencies, time.perf_counter() - started)


def _per_worker(url: str, schema: str) -> dict[str, int]:
    """Commits per worker: each run's head step is its commit count."""
    base = url.split("?")[0]
    with psycopg.connect(base) as conn:
        rows = conn.execute(
            f"SELECT p.nodename || ':' || p.nodeport, sum(r.head_step) "
            f"FROM {schema}.runs r JOIN pg_dist_shard_placement p ON p.shardid = "
            f"get_shard_id_for_distribution_column('{schema}.runs', r.run_id) "
            "GROUP BY 1 ORDER BY 1"
        ).fetchall()
    return {str(node): int(count) for node, count in rows}


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def compare(
    *,
    pg_url: str,
    citus_url: str,
    agents: int,
    turns: int,
    steps: int,
    pool: int,
    prefix: str,
    keep: bool,
    log: Callable[[str], None],
) -> CitusComparison:
    """Run both workloads on the single server, then on Citus."""
    results: dict[str, dict[str, Measured]] = {"single": {}, "citus": {}}
    per_worker: dict[str, int] = {}
    for where, url in (("single", pg_url), ("citus", citus_url)):
        for workload in ("conversation", "long_run"):
            schema = f"{prefix}_{where}_{workload}"
            _drop(url, schema)
            store_url = f"{url.split('?')[0]}?schema={schema}"
            log(f"{where}: {workload}")
            if workload == "conversation":
                measured = await _conversations(store_url, agents, turns, pool)
                if where == "citus":
                    per_worker = _per_worker(url, schema)
            else:
                measured = await _long_run(store_url, steps, pool)
            results[where][workload] = measured
            if not keep:
                _drop(url, schema)
    return CitusComparison(results["single"], results["citus"], per_worker)


def render(result: CitusComparison) -> str:
    """The side-by-side table, then each worker's share."""
    lines = [
        "| workload | metric | single server | Citus | ratio |",
        "| --- | --- | --- | --- | --- |",
    ]
    for workload in ("conversation", "long_run"):
        one, many = result.single[workload], result.citus[workload]
        lines.append(
            f"| {workload} | commits/s | {one.rate:.0f} | {many.rate:.0f} | "
            f"{one.rate / many.rate if many.rate else float('inf'):.2f}x fewer on Citus |"
        )
        for name in ("p50_ms", "p99_ms"):
            a, b = getattr(one, name), getattr(many, name)
            lines.append(
                f"| {workload} | commit {name[:3]} | {a:.2f} ms | {b:.2f} ms | "
                f"{b / a if a else float('inf'):.2f}x |"
            )
    total = sum(result.per_worker.values())
    if total:
        lines.append("")
        lines.append("Citus, conversation commits per worker:")
        mean = total / len(result.per_worker)
        for node, count in result.per_worker.items():
            lines.append(
                f"- {node}: {count} ({count / total:.1%}; {count / mean - 1:+.1%} from even)"
            )
    return "\n".join(lines)
