"""A writer for the session crash test: appends items to an Agents SDK session until killed.

    python tests/crash/session_writer.py URL SESSION_ID

Reads the session, checks it holds exactly ``item(1) .. item(n)``, prints ``START n``,
then appends ``item(n + 1)``, ``item(n + 2)``, ... one ``add_items`` call each, printing
``ACK <n>`` once each call has returned (durable).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agentckpt.integrations.openai_agents import AgentckptSession


def item(n: int) -> dict[str, Any]:
    """The ``n``-th item: an SDK-shaped message, with text that grows and varies."""
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n} " + "." * (n % 7)}


async def main(url: str, session_id: str) -> int:
    with AgentckptSession(session_id, url=url) as session:
        items = await session.get_items()
        n = len(items)
        if items != [item(i) for i in range(1, n + 1)]:
            print(f"BAD resumed items at {n}", flush=True)
            return 3
        print(f"START {n}", flush=True)
        while True:
            n += 1
            await session.add_items([item(n)])
            print(f"ACK {n}", flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
