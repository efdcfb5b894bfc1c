"""Baseline (b), the floor: one bare insert of the new bytes per write, nothing else.

No state, no upsert, no version, no blob handling: the cost of making the new bytes
durable in one autocommit statement on the same server, the least any checkpointing
method can pay. For a conversation each write inserts the new message's JSON (``seq``
counts the conversation's writes: the user's message, then the reply); for the long run,
the JSON of the keys that changed. The table has one index, on ``(id, seq)``, so that
reading a conversation back is not a full scan; resume reads every row and reassembles.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.subjects.connections import Database, open_database
from agentckpt.bench.workload import ConversationSpec, TurnSpec

__all__ = ["Floor", "FloorConversations", "FloorRun", "floor_ddl"]

_PG_DDL = """
CREATE TABLE floor_writes (conversation_id uuid NOT NULL, seq integer NOT NULL, payload bytea);
CREATE INDEX floor_writes_conversation ON floor_writes (conversation_id, seq);
"""
_SQLITE_DDL = """
CREATE TABLE floor_writes (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, payload BLOB);
CREATE INDEX floor_writes_conversation ON floor_writes (conversation_id, seq);
"""


def floor_ddl(dialect: str) -> str:
    """The floor's table and index on ``dialect`` (shared with the batched floor)."""
    return _PG_DDL if dialect == "postgresql" else _SQLITE_DDL


_INSERT = "INSERT INTO floor_writes (conversation_id, seq, payload) VALUES ({p}, {p}, {p})"
_READ = "SELECT payload FROM floor_writes WHERE conversation_id = {p} ORDER BY seq"


class _FloorTable:
    def __init__(self, db: Database) -> None:
        self.db = db
        mark = "%s" if db.dialect == "postgresql" else "?"
        self._insert = _INSERT.format(p=mark)
        self._read = _READ.format(p=mark)

    def _id(self, value: uuid.UUID) -> Any:
        return value if self.db.dialect == "postgresql" else str(value)

    async def insert(self, key: uuid.UUID, seq: int, payload: bytes) -> None:
        await self.db.execute(self._insert, (self._id(key), seq, payload))

    async def read(self, key: uuid.UUID) -> list[Any]:
        rows = await self.db.execute(self._read, (self._id(key),))
        return [orjson.loads(bytes(row[0])) for row in rows]

    async def close(self) -> None:
        await self.db.close()


class FloorConversations(_FloorTable):
    """Inserts each new message's bytes."""

    async def start(self, spec: ConversationSpec) -> None:
        """Nothing to set up."""

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Insert the user message."""
        payload = orjson.dumps(turn.user_message())
        await self.insert(spec.conversation_id, 2 * turn.number - 1, payload)

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Insert the reply (with its tool calls and results)."""
        payload = orjson.dumps(turn.assistant_message())
        await self.insert(spec.conversation_id, 2 * turn.number, payload)

    async def read_latest(self, spec: ConversationSpec) -> int:
        """Every message row (the floor keeps no state to read)."""
        return len(await self.read(spec.conversation_id))

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """Every message, in order."""
        messages = await self.read(spec.conversation_id)
        return len(messages), messages[-1]["content"]


class FloorRun(_FloorTable):
    """Inserts each step's changed keys."""

    async def run(self, spec: LongRunSpec, sample: Latencies) -> None:
        """Insert the initial state, then each step's changes."""
        await self.insert(spec.run_id, 0, orjson.dumps(spec.initial))
        for number, changes in enumerate(spec.steps, start=1):
            start = time.perf_counter()
            await self.insert(spec.run_id, number, orjson.dumps(changes))
            sample.add(time.perf_counter() - start)

    async def read_latest(self, spec: LongRunSpec) -> dict[str, Any]:
        """Every row, merged in order."""
        state: dict[str, Any] = {}
        for changes in await self.read(spec.run_id):
            state.update(changes)
        return state

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """The same as :meth:`read_latest`."""
        return await self.read_latest(spec)


class Floor:
    """Subject (b): the physical floor."""

    name = "floor"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(b) floor"

    def unavailable(self, dialect: str) -> str | None:
        """Always available."""
        return None

    async def _open(self, place: Place) -> Database:
        db = await open_database(place)
        await db.script(floor_ddl(place.dialect))
        return db

    async def conversations(self, place: Place) -> FloorConversations:
        """Create the table and return the subject."""
        return FloorConversations(await self._open(place))

    async def long_run(self, place: Place) -> FloorRun:
        """Create the table and return the subject."""
        return FloorRun(await self._open(place))
