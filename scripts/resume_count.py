"""Open one benchmark conversation N times, for instruction counts under callgrind.

Writes one benchmark conversation of ``--turns`` turns (default 30, seed 0; ``--chat``:
the curves' plain chat instead, about 1 KB a turn) through the benchmark's agentckpt
subject, opens it 5 times to warm up, then ``N`` more times (``--store-only``:
``AsyncStore.resume_run`` instead of ``open()``). Under ``valgrind --tool=callgrind``,
``(count(60) - count(10)) / 50`` is the instructions of one open, which load on the
machine does not change (run the real interpreter, not a pyenv shim)::

    PYTHONPATH=src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python scripts/resume_count.py 60 --schema-prefix me
"""

from __future__ import annotations

import argparse
import asyncio
import os

from agentckpt.bench.subjects.agentckpt import AgentckptConversations
from agentckpt.bench.workload import generate_chats, generate_conversations
from agentckpt.store.store_async import AsyncStore


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("opens", type=int)
    parser.add_argument("--url", default="postgresql://127.0.0.1:5432/test")
    parser.add_argument("--schema-prefix", required=True)
    parser.add_argument("--store-only", action="store_true")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--chat", action="store_true", help="the curves' chat workload")
    args = parser.parse_args()
    schema = f"{args.schema_prefix}_count_{os.getpid()}"
    url = args.url if args.url.startswith("sqlite") else f"{args.url}?schema={schema}"
    store = await AsyncStore.connect(url)
    try:
        subject = AgentckptConversations(store)
        generate = generate_chats if args.chat else generate_conversations
        spec = generate(0, 1, args.turns)[0]
        await subject.start(spec)
        for turn in spec.turns:
            await subject.user_message(spec, turn)
            await subject.complete_turn(spec, turn)
        for _ in range(5):
            await subject.resume(spec)
        for _ in range(args.opens):
            if args.store_only:
                await store.resume_run(spec.conversation_id)
            else:
                await subject.resume(spec)
    finally:
        await store.close()
        if not args.url.startswith("sqlite"):
            import psycopg

            with psycopg.connect(args.url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    asyncio.run(main())
