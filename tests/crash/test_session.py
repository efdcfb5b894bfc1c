"""SIGKILL an OpenAI Agents SDK session writer at random moments (reliability rows 2, 3
and 25 through the session), on SQLite and PostgreSQL.

Each round starts ``session_writer.py``, which resumes the session from what it reads,
waits for it to acknowledge an append, lets it run a random moment more and kills it. A
fresh session must then hold exactly the items an uninterrupted writer would have
written up to the last acknowledged one (or the one after it: committed, killed before
it could say so), and on SQLite the file passes ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")

from agentckpt._backends.factory import parse_url
from agentckpt.integrations.openai_agents import AgentckptSession
from tests.crash.session_writer import item
from tests.crash.test_store import Writer, crash_url, settle, writer_name, writer_url

WRITER = Path(__file__).with_name("session_writer.py")
KILLS = 10


def read_items(url: str, session_id: str) -> list[Any]:
    async def read() -> list[Any]:
        with AgentckptSession(session_id, url=url) as session:
            return list(await session.get_items())

    return asyncio.run(read())


@pytest.mark.crash
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_of_a_session_writer_loses_no_acknowledged_item(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = crash_url(backend, request)
    name = writer_name()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last = 0
    after_commit = 0
    for round_ in range(KILLS):
        where = f"seed {seed}, round {round_}, last ACK {last}"
        with open(tmp_path / f"writer-{round_}.err", "w+") as stderr:
            writer = Writer([writer_url(url, name), "crash-session"], stderr, script=WRITER)
            try:
                assert writer.first_ack.wait(timeout=60), f"no ACK within 60 s ({where})"
                time.sleep(rng.uniform(0.05, 0.4))  # the random moment of the kill
            finally:
                code = writer.kill()
            stderr.seek(0)
            assert code == -signal.SIGKILL, f"writer ended with {code} ({where}): {stderr.read()}"
        assert writer.lines[0] == f"START {last}", f"resumed elsewhere ({where}): {writer.lines}"
        assert writer.acks == list(range(last + 1, writer.acks[-1] + 1)), where
        settle(url, name)
        items = read_items(url, "crash-session")
        head = len(items)
        acked = writer.acks[-1]
        assert head in (acked, acked + 1), f"{head} items after ACK {acked} ({where})"
        # Exactly what an uninterrupted writer would hold: no item lost, doubled or torn.
        assert items == [item(n) for n in range(1, head + 1)], where
        target = parse_url(url)
        if target.dialect == "sqlite":
            with closing(sqlite3.connect(target.location)) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        after_commit += head == acked + 1
        last = head
    assert last >= KILLS
    print(f"{backend}: {KILLS} kills, {last} items, {after_commit} between commit and ACK")
