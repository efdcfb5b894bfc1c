"""Long-run resume time: ``AsyncStore.latest`` of the benchmark's long run, sample by sample.

Runs the benchmark's long run (``--steps`` steps over ``--keys`` keys, seed 0) through the
benchmark's agentckpt subject on a fresh schema, runs a plain ``VACUUM`` of its tables
(the benchmark's last one), then times reads and resumes as the benchmark does
(``--warmup`` untimed resumes, then ``--resumes`` rounds of a ``latest`` and a resume
from a new store object, every state checked). For every timed resume it records the
wall time, the client CPU (``time.process_time``, all threads, and
``time.thread_time``, the event loop's thread), the time in ``backend.read`` (the
query, its connection checkout and the rows' load) and the collector's passes during
it, then prints the percentiles, the rows and bytes the resume reads, and the slowest
resumes one by one (``--server-log``: the server logs each statement's time too, to
compare with the client's). Run it against two source trees to compare them::

    PYTHONPATH=src python scripts/resume_longrun.py --schema-prefix me --keys 300
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import threading
import time
from typing import Any

import psycopg
from psycopg import sql

from agentckpt.bench.longrun import generate_long_run
from agentckpt.bench.measure import Latencies, percentile
from agentckpt.bench.subjects.agentckpt import AgentckptRun
from agentckpt.store.store_async import AsyncStore


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="postgresql://127.0.0.1:5432/test")
    parser.add_argument("--schema-prefix", required=True)
    parser.add_argument("--keys", type=int, default=30)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--resumes", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--slowest", type=int, default=6)
    parser.add_argument(
        "--server-log",
        action="store_true",
        help="SET log_min_duration_statement = 0 on every pooled connection before the "
        "warm-up (superuser), so the server log has each resume's execution time",
    )
    args = parser.parse_args()
    schema = f"{args.schema_prefix}_lr_{os.getpid()}"
    url = f"{args.url}?schema={schema}&pool_min={args.pool}&pool_max={args.pool}"
    store = await AsyncStore.connect(url)
    backend: Any = store.backend
    read_time = [0.0]
    read_rows: list[Any] = []
    original_read = backend.read

    async def read(name: str, params: Any) -> Any:
        start = time.perf_counter()
        rows = await original_read(name, params)
        read_time[0] += time.perf_counter() - start
        read_rows[:] = [rows]
        return rows

    backend.read = read
    passes: list[int] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(int(info["generation"]))

    try:
        spec = generate_long_run(0, args.steps, args.keys)
        subject = AgentckptRun(store)
        await subject.run(spec, Latencies())
        async with await psycopg.AsyncConnection.connect(args.url, autocommit=True) as conn:
            for table in ("runs", "steps", "blobs", "history"):
                await conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(schema, table)))
        expected = spec.state_at(len(spec.steps))
        if args.server_log:
            for _ in range(args.pool):  # the pool lends its connections in turn
                async with backend._pool.connection() as conn:
                    await conn.execute("SET log_min_duration_statement = 0")
        for _ in range(args.warmup):
            await subject.resume(spec)
        rows = read_rows[0]
        print(
            f"resume reads {len(rows)} rows, kinds {[r['kind'][0] for r in rows]}, "
            f"{sum(len(r['payload']) for r in rows)} payload bytes, "
            f"state {rows[-1]['state_bytes']} bytes"
        )
        samples: list[tuple[float, float, float, list[int], int, float]] = []
        gc.callbacks.append(on_gc)
        for i in range(args.resumes):
            await subject.read_latest(spec)
            passes.clear()
            read_time[0] = 0.0
            t0, c0, w0 = time.thread_time(), time.process_time(), time.perf_counter()
            state = await subject.resume(spec)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            own = time.thread_time() - t0
            samples.append((wall * 1e3, cpu * 1e3, read_time[0] * 1e3, list(passes), i, own * 1e3))
            if state != expected:
                raise SystemExit(f"resume {i}: the state differs")
        gc.callbacks.remove(on_gc)
        walls = sorted(s[0] for s in samples)
        cpus = sorted(s[1] for s in samples)
        reads = sorted(s[2] for s in samples)
        print(
            f"{args.keys} keys, {args.resumes} resumes: wall P50 {percentile(walls, 0.5):.3f} "
            f"P99 {percentile(walls, 0.99):.3f} max {walls[-1]:.3f} ms; client CPU P50 "
            f"{percentile(cpus, 0.5):.3f} P99 {percentile(cpus, 0.99):.3f} ms; read P50 "
            f"{percentile(reads, 0.5):.3f} P99 {percentile(reads, 0.99):.3f} ms; "
            f"collector passes {sum(len(s[3]) for s in samples)}"
        )
        print("slowest: index, wall, process CPU, this thread's CPU, read (ms), collector passes")
        for wall, cpu, rd, gens, i, own in sorted(samples, reverse=True)[: args.slowest]:
            print(f"  {i:4d} {wall:7.3f} {cpu:7.3f} {own:7.3f} {rd:7.3f} {gens}")
        print(f"threads: {[t.name for t in threading.enumerate()]}")
    finally:
        await store.close()
        async with await psycopg.AsyncConnection.connect(args.url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


if __name__ == "__main__":
    asyncio.run(main())
