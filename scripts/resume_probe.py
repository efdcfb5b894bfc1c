"""Conversation resume time: ``AsyncConversations.open()`` of benchmark conversations.

Writes ``--conversations`` conversations of ``--turns`` turns (the benchmark's workload,
seed 0; ``--chat``: the curves' plain chats, about 1 KB a turn) through the benchmark's
agentckpt subject, then opens each ``--opens`` times from a new ``AsyncConversations``
(the benchmark's resume), and prints the wall P50/P99 and the client CPU
(``time.process_time``) per open. Run it against two source trees to compare
them (the script imports only what both have)::

    PYTHONPATH=src python scripts/resume_probe.py --schema-prefix me
    PYTHONPATH=/work/main/src python scripts/resume_probe.py --schema-prefix me

``--store-only`` times the store's part alone (``AsyncStore.resume_run``: the query and
the state rebuilt); ``--profile N`` prints cProfile's top N functions of the opens
instead of timing them (sorted by ``$SORT``, default ``tottime``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import time

from agentckpt.bench.subjects.agentckpt import AgentckptConversations
from agentckpt.bench.workload import generate_chats, generate_conversations
from agentckpt.store.store_async import AsyncStore


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="postgresql://127.0.0.1:5432/test")
    parser.add_argument("--schema-prefix", required=True)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--opens", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--chat", action="store_true", help="the curves' chat workload")
    parser.add_argument(
        "--store-only",
        action="store_true",
        help="time the store's part of open() alone (AsyncStore.resume_run), for comparison",
    )
    args = parser.parse_args()
    if args.url.startswith("sqlite"):
        url = args.url
    else:
        schema = f"{args.schema_prefix}_resume_{os.getpid()}"
        url = f"{args.url}?schema={schema}&pool_min=2&pool_max=2"
    store = await AsyncStore.connect(url)
    try:
        subject = AgentckptConversations(store)
        generate = generate_chats if args.chat else generate_conversations
        specs = generate(0, args.conversations, args.turns)
        for spec in specs:
            await subject.start(spec)
            for turn in spec.turns:
                await subject.user_message(spec, turn)
                await subject.complete_turn(spec, turn)
        for spec in specs:  # warm the connections and the statement caches
            await subject.resume(spec)
        profile = cProfile.Profile() if args.profile else None
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(args.opens):
            for spec in specs:
                c0, w0 = time.process_time(), time.perf_counter()
                if profile is not None:
                    profile.enable()
                if args.store_only:
                    _run, checkpoint = await store.resume_run(spec.conversation_id)
                    assert checkpoint is not None
                    count = len(checkpoint.state["conversation"])
                else:
                    count, _last = await subject.resume(spec)
                if profile is not None:
                    profile.disable()
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
                if count != 2 * len(spec.turns):
                    raise AssertionError(f"resume read {count} messages")
        if profile is not None:
            order = os.environ.get("SORT", "tottime")
            pstats.Stats(profile).sort_stats(order).print_stats(args.profile)
        ms = [w * 1000 for w in walls]
        print(
            f"opens {len(ms)}: wall P50 {_quantile(ms, 0.5):.3f} ms, P99 {_quantile(ms, 0.99):.3f}"
            f" ms, mean {statistics.fmean(ms):.3f} ms; client CPU mean"
            f" {statistics.fmean(cpus) * 1000:.3f} ms, P50 {_quantile(cpus, 0.5) * 1000:.3f} ms;"
            f" load {os.getloadavg()[0]:.2f}"
        )
    finally:
        await store.close()
        if not args.url.startswith("sqlite"):
            import psycopg

            with psycopg.connect(args.url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    asyncio.run(main())
