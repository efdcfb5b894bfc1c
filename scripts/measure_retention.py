"""Measure retention on PostgreSQL: rows deleted per second and the longest lock held.

    python scripts/measure_retention.py --runs 1000000 --steps 2 --batch-size 1000

Fills a scratch schema with ``--runs`` completed runs (each with ``--steps`` steps) made
by SQL ``generate_series`` and aged 40 days, plus one active run a writer commits to
throughout, then applies ``ended_days=30``. Prints runs and rows deleted per second, the
longest delete batch (its transaction is the longest any lock was held) and the worst
latency of the concurrent writer's commits. The schema is dropped at the end.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid

import psycopg

from agentckpt import Store
from agentckpt.ops.retention import RetentionPolicy, apply_retention


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default="postgresql://127.0.0.1:5432/postgres")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    schema = f"retention_{uuid.uuid4().hex[:8]}"
    url = f"{args.pg}?schema={schema}"
    with Store.connect(url):
        pass
    started = time.perf_counter()
    with psycopg.connect(args.pg, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute(
            "INSERT INTO runs (run_id, agent_id, status, config, created_at, updated_at) "
            "SELECT gen_random_uuid(), 'agent-' || (n %% 50), 'completed', '\\x7b7d'::bytea, "
            "now() - interval '40 days', now() - interval '40 days' "
            "FROM generate_series(1, %s) n",
            (args.runs,),
        )
        for step in range(1, args.steps + 1):
            conn.execute(
                "INSERT INTO steps (run_id, step, parent_step, kind, codec, payload, raw_bytes, "
                "state_bytes, checksum) SELECT run_id, %s, %s, %s, 'json', "
                "convert_to(repeat('x', 200), 'UTF8'), 200, 200, '\\x00'::bytea FROM runs",
                (step, step - 1 if step > 1 else None, "snapshot" if step == 1 else "delta"),
            )
        conn.execute("ANALYZE")
    print(f"filled {args.runs} runs x {args.steps} steps in {time.perf_counter() - started:.1f} s")

    worst = 0.0
    stop = threading.Event()
    commits = 0

    def writer() -> None:
        nonlocal worst, commits
        with Store.connect(url) as store:
            run = store.create_run(agent_id="agent-1")
            while not stop.is_set():
                began = time.perf_counter()
                store.commit(run.run_id, {"n": commits})
                worst = max(worst, time.perf_counter() - began)
                commits += 1
                time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(1)
    try:
        with Store.connect(url) as store:
            report = apply_retention(
                store, RetentionPolicy(ended_days=30), batch_size=args.batch_size
            )
    finally:
        stop.set()
        thread.join()
    rows = report.total_runs * (1 + args.steps)
    print(
        f"deleted {report.total_runs} runs ({rows} rows) in {report.seconds:.1f} s: "
        f"{report.total_runs / report.seconds:,.0f} runs/s, {rows / report.seconds:,.0f} rows/s; "
        f"{report.batches} batches of {args.batch_size}, longest batch "
        f"{report.longest_batch * 1000:.0f} ms; concurrent writer: {commits} commits, "
        f"worst {worst * 1000:.0f} ms"
    )
    with psycopg.connect(args.pg, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


if __name__ == "__main__":
    main()
