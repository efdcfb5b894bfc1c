"""The PostgreSQL backend's client instructions per lone step commit, without the store.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/pg_commit_cpu.py STEPS [--url URL] [--schema-prefix P]
        [--sync]

Creates one run in a fresh schema (``<schema-prefix>_<random>``, dropped afterwards), then
commits ``STEPS`` steps through ``commit_batch([write])`` of the async backend (the
benchmark's path; ``--sync`` the generated sync twin), each a delta of about 500 bytes
stored as it is (codec ``json``: no compression), guarded on the step before, as the
long run's lone agent commits. The writes (1000, or ``STEPS`` if more) are built before
the first commit, so under ``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``,
``(count(320) - count(20)) / 300`` is the backend's own instructions per commit: the
statement through psycopg, the pool checkout, the deadline, the outcome.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time
import uuid

import psycopg

from agentckpt import Store
from agentckpt._core.writes import Payload, StepWrite
from agentckpt.store.store_async import AsyncStore

PG_URL = "postgresql://root@127.0.0.1:5432/test"


def writes(run_id: uuid.UUID, steps: int) -> list[StepWrite]:
    """``steps`` chained step writes of ``run_id``, steps 1 to ``steps``."""
    out = []
    for step in range(1, steps + 1):
        payload = (b'{"op":"replace","key":"k%06d","value":"' % step) + b"x" * 450 + b'"}'
        out.append(
            StepWrite(
                run_id=run_id,
                step=step,
                parent_step=step - 1 if step > 1 else None,
                kind="delta" if step > 1 else "snapshot",
                is_open=False,
                stored=Payload.packed("json", payload),
                state_version=1,
                write_version=step,
                raw_bytes=len(payload),
                state_bytes=12_000,
                checksum=hashlib.sha256(payload).digest(),
                expected_step=step - 1 if step > 1 else None,
                expected_version=step - 1,
                epoch=None,
                snapshot_step=1,
                chain_bytes=len(payload) * step,
                prune_below=None,
                seal_step=None,
                metadata=None,
                token=uuid.uuid4().bytes,
            )
        )
    return out


async def run_async(url: str, steps: int) -> float:
    """Commit the steps through the async backend; the CPU seconds per commit."""
    store = await AsyncStore.connect(url)
    try:
        info = await store.create_run()
        todo = writes(info.run_id, max(steps, 1000))[:steps]
        backend = store.backend
        cpu = time.process_time()
        for write in todo:
            await backend.commit_batch([write])
        return (time.process_time() - cpu) / steps
    finally:
        await store.close()


def run_sync(url: str, steps: int) -> float:
    """Commit the steps through the sync backend; the CPU seconds per commit."""
    with Store.connect(url) as store:
        info = store.create_run()
        todo = writes(info.run_id, max(steps, 1000))[:steps]
        backend = store.backend
        cpu = time.process_time()
        for write in todo:
            backend.commit_batch([write])
        return (time.process_time() - cpu) / steps


def main() -> None:
    """Commit the steps; print the CPU per commit."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", type=int)
    parser.add_argument("--url", default=PG_URL)
    parser.add_argument("--schema-prefix", default="pg_commit_cpu")
    parser.add_argument("--sync", action="store_true")
    args = parser.parse_args()
    schema = f"{args.schema_prefix}_{uuid.uuid4().hex[:8]}"
    url = f"{args.url}{'&' if '?' in args.url else '?'}schema={schema}"
    try:
        per = run_sync(url, args.steps) if args.sync else asyncio.run(run_async(url, args.steps))
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(f"{1e6 * per:.1f} us CPU per commit over {args.steps}")


if __name__ == "__main__":
    main()
