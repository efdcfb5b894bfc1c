"""The benchmark's long run through ``AsyncAgentRun``, for the async step's figures.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/async_step.py KEYS STEPS [--dir DIR] [--profile OUT]
        [--rounds R] [--split] [--inline-limit S] [--url postgresql://...]
        [--schema-prefix P]

Drives ``AsyncAgentRun`` as the benchmark's ``AgentckptRun`` does (lease, heartbeat, a
snapshot every 20 steps, each step replacing 1 to 3 of the 30 or 300 keys of
``agentckpt.bench.longrun``) on a fresh SQLite file in ``DIR`` (default: a new directory
under ``/tmp``, the disk the benchmark's files are on) and prints, per round, the wall
and the process CPU per step (both threads) and the steps per second. ``--profile``
writes a cProfile of the last round (the event loop's thread only). Under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``, ``(count(320) - count(20)) /
300`` is the async step's instructions, as ``scripts/step_cpu.py`` gives the sync one's.
``--url`` runs on PostgreSQL instead, each round in a fresh schema named
``<schema-prefix>_<random>`` (dropped afterwards).

``--inline-limit S`` sets the SQLite store's ``inline_limit`` (0: every call on the
SQLite thread, as before it had one; default: the store's).
``--split`` times each call through the SQLite worker thread (``sqlite_worker._Worker``,
so it sets ``inline_limit`` 0)
in three parts, and prints their medians and means over the last round: from the event
loop's ``put`` to the worker starting the call (its wake-up), the call on the worker
(packing, statements, the commit's fsync), and from the call's end to the event loop
resuming the caller (the loop's wake-up, the loop iterations); with the worker's time per
statement verb (``BEGIN``, ``UPDATE``, ``INSERT``, ``COMMIT``, ...) per step. The wall per
step less these calls is the event loop's own work (the loop, the store, the plan).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from agentckpt._backends import sqlite as sqlite_backend
from agentckpt._backends import sqlite_worker
from agentckpt.bench.longrun import generate_long_run
from agentckpt.runs import AsyncAgentRun, AsyncStepContext
from agentckpt.store.store_async import AsyncStore

T = TypeVar("T")

# Per call through the worker: (wake-up, call, hand-back) seconds.
_HOPS: list[tuple[float, float, float]] = []
# Worker seconds per statement verb.
_VERBS: defaultdict[str, float] = defaultdict(float)
# The calls of a round's measured steps.
_WINDOW: list[tuple[float, float, float]] = []


class _TimedWorker(sqlite_worker._Worker):
    """The worker, with the three parts of each call timed (one call at a time)."""

    _started = _ended = 0.0

    def _run(self, fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        self._started = time.perf_counter()
        try:
            return super()._run(fn)
        finally:
            self._ended = time.perf_counter()

    async def call(self, fn: Callable[[], T]) -> T:
        put = time.perf_counter()
        result = await super().call(fn)
        back = time.perf_counter()
        _HOPS.append((self._started - put, self._ended - self._started, back - self._ended))
        return result


class _TimedCursor:
    """A cursor whose ``execute`` adds its time to its statement's verb."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        started = time.perf_counter()
        try:
            return self._cursor.execute(sql, *args)
        finally:
            _VERBS[sql.split(None, 1)[0]] += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _TimedConnection:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def cursor(self) -> _TimedCursor:
        return _TimedCursor(self._conn.cursor())


def _split() -> None:
    """Time the worker's calls and the lone commit's statements from now on."""
    sqlite_worker._Worker = _TimedWorker  # type: ignore[misc]
    alone = sqlite_backend.SqliteBackend._commit_alone

    def timed(self: Any, conn: sqlite3.Connection, write: Any) -> Any:
        return alone(self, _TimedConnection(conn), write)  # type: ignore[arg-type]

    sqlite_backend.SqliteBackend._commit_alone = timed  # type: ignore[method-assign]


def _print_split() -> None:
    hops = _WINDOW
    for n, name in enumerate(("wake-up", "call", "hand-back")):
        values = [hop[n] * 1e6 for hop in hops]
        print(
            f"  {name:9s}: median {statistics.median(values):6.1f} us, "
            f"mean {statistics.fmean(values):6.1f} us"
        )
    for verb, seconds in _VERBS.items():
        print(f"  {verb:9s}: {seconds * 1e6 / len(hops):6.1f} us a step")


async def _round(
    directory: str,
    keys: int,
    steps: int,
    profile: cProfile.Profile | None,
    pg: tuple[str, str] | None = None,
    inline_limit: float | None = None,
) -> None:
    spec = generate_long_run(0, max(steps, 1000), keys)
    if pg is None:
        query = "" if inline_limit is None else f"?inline_limit={inline_limit}"
        store = await AsyncStore.connect(f"sqlite:///{directory}/{uuid.uuid4().hex}.db{query}")
    else:
        url, schema = pg
        store = await AsyncStore.connect(f"{url}{'&' if '?' in url else '?'}schema={schema}")

    async def step(ctx: AsyncStepContext) -> Any:
        ctx.state.update(spec.steps[ctx.step - 1])
        return ctx.state

    run = AsyncAgentRun(
        store,
        spec.run_id,
        agent_id="long-run",
        initial_state=dict(spec.initial),
        snapshot_interval=20,
    )
    async with run:
        iterator = run.steps(step, max_steps=steps).__aiter__()
        await iterator.__anext__()  # step 0: the initial state
        wall, cpu = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        count = 0
        _HOPS.clear()
        _VERBS.clear()
        async for _ in iterator:
            count += 1
        _WINDOW[:] = _HOPS
        if profile is not None:
            profile.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await store.close()
    if pg is not None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg[0], autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{pg[1]}" CASCADE')
    print(
        f"{keys} keys: {1e3 * wall / count:.3f} ms wall, {1e3 * cpu / count:.3f} ms CPU "
        f"per step, {count / wall:.0f} steps/s over {count}"
    )


def main() -> None:
    """Run the rounds; print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", type=int)
    parser.add_argument("steps", type=int)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--split", action="store_true")
    parser.add_argument("--inline-limit", type=float, default=None)
    parser.add_argument("--url", default=None, help="a PostgreSQL URL (default: SQLite)")
    parser.add_argument("--schema-prefix", default="async_step")
    args = parser.parse_args()
    if args.split:
        _split()
        args.inline_limit = 0.0
    directory = args.dir or tempfile.mkdtemp(prefix="async-step-")
    for number in range(args.rounds):
        last = number == args.rounds - 1
        profile = cProfile.Profile() if args.profile and last else None
        pg = None
        if args.url:
            pg = (args.url, f"{args.schema_prefix}_{uuid.uuid4().hex[:8]}")
        asyncio.run(_round(directory, args.keys, args.steps, profile, pg, args.inline_limit))
        if profile is not None:
            profile.dump_stats(args.profile)
    if args.split:
        _print_split()


if __name__ == "__main__":
    main()
