"""A sync AgentRun of the benchmark's long run, for steady per-step figures.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/step_cpu.py KEYS STEPS [--cpu] [--backend postgres]

Runs ``STEPS`` steps of the long-run workload (``agentckpt.bench.longrun``, ``KEYS`` 30
or 300, 1 to 3 keys replaced per step, a snapshot every 20 steps, no heartbeat) on a
fresh SQLite file in ``/dev/shm`` (or a fresh PostgreSQL schema, dropped afterwards).
The workload is generated for 1000 steps whatever ``STEPS`` is, so two runs of different
lengths differ only by their steps: under ``valgrind --tool=callgrind``,
``(count(320 steps) - count(20 steps)) / 300`` is the instructions of one step, which
load on the machine does not change. Run both under the same ``PYTHONHASHSEED`` (0):
with a random hash seed each, the two processes' start-up differs by millions of
instructions, up to 60k a step once divided (the same tree gave 734.6k and 796.1k).
``--cpu`` prints ``time.process_time`` per step.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from typing import Any

from agentckpt import AgentRun, Store
from agentckpt.bench.longrun import generate_long_run

PG_DSN = "postgresql://root@127.0.0.1:5432/postgres"


def main() -> None:
    """Run the steps; print the CPU per step when asked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", type=int)
    parser.add_argument("steps", type=int)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    spec = generate_long_run(0, max(args.steps, 1000), args.keys)
    schema = f"step_cpu_{uuid.uuid4().hex[:8]}"
    if args.backend == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp(dir='/dev/shm')}/steps.db"
    else:
        url = f"{PG_DSN}?schema={schema}"
    store = Store.connect(url)
    run = AgentRun(
        store, spec.run_id, initial_state=dict(spec.initial), heartbeat=False, snapshot_interval=20
    )

    def step(ctx: Any) -> Any:
        ctx.state.update(spec.steps[ctx.step - 1])
        return ctx.state

    with run:
        iterator = run.steps(step, max_steps=args.steps)
        next(iterator)  # step 0: the initial state
        cpu = time.process_time()
        count = sum(1 for _ in iterator)
        cpu = time.process_time() - cpu
    store.close()
    if args.backend == "postgres":
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    if args.cpu:
        print(f"{args.keys} keys, {args.backend}: {1000 * cpu / count:.3f} ms/step over {count}")


if __name__ == "__main__":
    main()
