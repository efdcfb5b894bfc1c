"""Encryption at rest, on vs off, paired: ``python -m agentckpt.bench.encryption``.

``agentckpt bench --encryption`` runs the encrypted subject after the others, minutes
apart, so on a shared machine the two columns differ by whatever else ran meanwhile.
This measurement interleaves instead: trial after trial, off then on (then on then off),
each on a fresh store, the same saturated workload (concurrent writers committing a
growing conversation-like state as fast as they can), and reports the median commits/s
and client CPU per commit of each mode, their ratio, and the bytes stored.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentckpt.crypto import Encryption, StaticKeys, new_key
from agentckpt.store.store_async import AsyncStore

__all__ = ["Trial", "main", "run_trial"]

# About the size of one chat message with a tool result: the state grows by one each
# commit, so payloads are deltas of this size (snapshots every 50 steps, the default).
MESSAGE = "The weather in Lisbon is 21 C and sunny; the user asked for a 3-day forecast. " * 12


@dataclass(frozen=True, slots=True)
class Trial:
    """One timed trial: a mode, its throughput and cost."""

    encrypted: bool
    commits: int
    seconds: float
    cpu_seconds: float
    stored_bytes: int

    @property
    def per_second(self) -> float:
        """Commits per second."""
        return self.commits / self.seconds

    @property
    def cpu_ms_per_commit(self) -> float:
        """Client CPU milliseconds per commit."""
        return self.cpu_seconds * 1000 / self.commits


async def _writer(store: AsyncStore, commits: int) -> int:
    run = await store.create_run(agent_id="bench", config={"model": "m", "key": MESSAGE[:40]})
    messages: list[dict[str, Any]] = []
    stored = 0
    for turn in range(commits):
        messages.append({"role": "user" if turn % 2 else "assistant", "content": MESSAGE})
        info = await store.commit(run.run_id, {"messages": messages})
        stored += info.stored_bytes
    return stored


async def run_trial(url: str, *, encrypted: bool, writers: int, commits: int) -> Trial:
    """One trial on a fresh store at ``url``."""
    encryption = Encryption(keys=StaticKeys({"bench": new_key()})) if encrypted else None
    store = await AsyncStore.connect(url, encryption=encryption)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        stored = await asyncio.gather(*(_writer(store, commits) for _ in range(writers)))
        seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        await store.close()
    return Trial(encrypted, writers * commits, seconds, cpu_seconds, sum(stored))


def _urls(backend: str, pg_url: str, directory: Path) -> Any:
    while True:
        name = f"crypto_{uuid.uuid4().hex[:10]}"
        if backend == "sqlite":
            yield f"sqlite:///{directory / name}.db", None
        else:
            yield f"{pg_url}?schema={name}", name


def _drop(pg_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    """Run the paired trials and print a Markdown table."""
    parser = argparse.ArgumentParser(prog="python -m agentckpt.bench.encryption")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://127.0.0.1:5432/test")
    parser.add_argument("--writers", type=int, default=50, help="concurrent writers")
    parser.add_argument("--commits", type=int, default=40, help="commits per writer")
    parser.add_argument("--pairs", type=int, default=5, help="off/on pairs (order alternates)")
    args = parser.parse_args(argv)
    trials: list[Trial] = []
    with tempfile.TemporaryDirectory() as tmp:
        urls = _urls(args.backend, args.pg_url, Path(tmp))
        for pair in range(args.pairs):
            for encrypted in (False, True) if pair % 2 == 0 else (True, False):
                url, schema = next(urls)
                trial = asyncio.run(
                    run_trial(url, encrypted=encrypted, writers=args.writers, commits=args.commits)
                )
                if schema is not None:
                    _drop(args.pg_url, schema)
                trials.append(trial)
                print(
                    f"pair {pair + 1}: {'on ' if encrypted else 'off'} "
                    f"{trial.per_second:8.1f} commits/s, {trial.cpu_ms_per_commit:.3f} ms CPU",
                    file=sys.stderr,
                    flush=True,
                )
    off = [t for t in trials if not t.encrypted]
    on = [t for t in trials if t.encrypted]

    def median(values: list[float]) -> float:
        return statistics.median(values)

    rate_off, rate_on = median([t.per_second for t in off]), median([t.per_second for t in on])
    cpu_off = median([t.cpu_ms_per_commit for t in off])
    cpu_on = median([t.cpu_ms_per_commit for t in on])
    print(
        f"| {args.backend}: {args.writers} writers x {args.commits} commits, "
        f"{args.pairs} pairs | off | on | on vs off |"
    )
    print("|---|---|---|---|")
    print(
        f"| commits/s (median) | {rate_off:.1f} | {rate_on:.1f} | {rate_on / rate_off - 1:+.1%} |"
    )
    print(
        f"| client CPU ms per commit (median) | {cpu_off:.3f} | {cpu_on:.3f} | "
        f"{cpu_on / cpu_off - 1:+.1%} |"
    )
    print(
        f"| commits/s, each trial | {', '.join(f'{t.per_second:.0f}' for t in off)} | "
        f"{', '.join(f'{t.per_second:.0f}' for t in on)} | |"
    )
    print(
        f"| payload bytes stored | {off[0].stored_bytes} | {on[0].stored_bytes} | "
        f"{on[0].stored_bytes / off[0].stored_bytes - 1:+.1%} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
