"""Baseline (a): the articles' own methods, as they are written.

Conversations (seed 000): table ``agent_checkpoints`` of the article, the whole state
upserted as JSONB (``json.dumps``, as the article) at every write with ``INSERT ... ON
CONFLICT (conversation_id, turn_number) DO UPDATE SET state = EXCLUDED.state, updated_at =
now(), version = version + 1``: the user's message creates the turn's row, the completed
turn updates it. Resume reads the latest row, by ``turn_number DESC`` (the article's
``ORDER BY updated_at DESC`` trusts clocks), parses it, and checks config and tools.

Long run (seed 001's naive method): one row holding the full state per step, in the
article's ``agent_checkpoints`` table, never pruned.

On SQLite the same tables and statements, with TEXT for UUID and JSON.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from psycopg.types.json import Jsonb

from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.base import Place, check_config
from agentckpt.bench.subjects.connections import Database, open_database
from agentckpt.bench.workload import (
    ConversationSpec,
    TurnSpec,
    apply_turn,
    apply_user,
    initial_state,
)

__all__ = ["SeedMethod"]

_PG_CONVERSATION_DDL = """
CREATE TABLE agent_checkpoints (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    conversation_id UUID NOT NULL,
    agent_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    turn_number INTEGER NOT NULL,
    state JSONB NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (conversation_id, turn_number)
);
CREATE INDEX idx_checkpoints_conversation_updated
    ON agent_checkpoints (conversation_id, updated_at DESC);
"""
_SQLITE_CONVERSATION_DDL = """
CREATE TABLE agent_checkpoints (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    turn_number INTEGER NOT NULL,
    state TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (conversation_id, turn_number)
);
CREATE INDEX idx_checkpoints_conversation_updated
    ON agent_checkpoints (conversation_id, updated_at DESC);
"""
_PG_UPSERT = """
INSERT INTO agent_checkpoints (conversation_id, agent_id, turn_number, state, version)
VALUES (%s, %s, %s, %s, 1)
ON CONFLICT (conversation_id, turn_number)
DO UPDATE SET
    state = EXCLUDED.state,
    updated_at = now(),
    version = agent_checkpoints.version + 1
"""
_SQLITE_UPSERT = """
INSERT INTO agent_checkpoints (id, conversation_id, agent_id, turn_number, state, version)
VALUES (?, ?, ?, ?, ?, 1)
ON CONFLICT (conversation_id, turn_number)
DO UPDATE SET
    state = excluded.state,
    updated_at = strftime('%Y-%m-%dT%H:%M:%f', 'now'),
    version = agent_checkpoints.version + 1
"""
_RECOVER = """
SELECT state, agent_id, turn_number
FROM agent_checkpoints
WHERE conversation_id = {p}
ORDER BY turn_number DESC
LIMIT 1
"""

_PG_RUN_DDL = """
CREATE TABLE agent_checkpoints (
    run_id UUID NOT NULL,
    step_id BIGINT NOT NULL,
    parent_step_id BIGINT,
    created_at TIMESTAMPTZ DEFAULT now(),
    state_json JSONB NOT NULL,
    is_snapshot BOOLEAN DEFAULT FALSE,
    PRIMARY KEY (run_id, step_id)
);
"""
_SQLITE_RUN_DDL = """
CREATE TABLE agent_checkpoints (
    run_id TEXT NOT NULL,
    step_id INTEGER NOT NULL,
    parent_step_id INTEGER,
    created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    state_json TEXT NOT NULL,
    is_snapshot INTEGER DEFAULT 0,
    PRIMARY KEY (run_id, step_id)
);
"""
_RUN_INSERT = (
    "INSERT INTO agent_checkpoints (run_id, step_id, parent_step_id, state_json, is_snapshot) "
    "VALUES ({p}, {p}, {p}, {p}, TRUE)"
)
_RUN_LATEST = (
    "SELECT state_json FROM agent_checkpoints WHERE run_id = {p} ORDER BY step_id DESC LIMIT 1"
)


def _sql(db: Database, template: str) -> str:
    return template.format(p="%s" if db.dialect == "postgresql" else "?")


def _json_param(db: Database, value: Any) -> Any:
    # psycopg's Jsonb adapter encodes with json.dumps, as the article does.
    return Jsonb(value) if db.dialect == "postgresql" else json.dumps(value)


def _json_value(value: Any) -> Any:
    # psycopg parses JSONB itself (json.loads); SQLite hands back the text.
    return json.loads(value) if isinstance(value, str) else value


def _id(db: Database, value: uuid.UUID) -> Any:
    return value if db.dialect == "postgresql" else str(value)


class SeedConversations:
    """Seed 000's upsert of the whole state at every write."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.states: dict[uuid.UUID, dict[str, Any]] = {}
        self._recover = _sql(db, _RECOVER)

    async def start(self, spec: ConversationSpec) -> None:
        """Nothing is written before the first turn (the article's core method)."""
        self.states[spec.conversation_id] = initial_state(spec)

    async def _save(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        state = self.states[spec.conversation_id]
        cid = _id(self.db, spec.conversation_id)
        if self.db.dialect == "postgresql":
            params: tuple[Any, ...] = (cid, spec.agent_id, turn.number, Jsonb(state))
            await self.db.execute(_PG_UPSERT, params)
        else:
            params = (str(uuid.uuid4()), cid, spec.agent_id, turn.number, json.dumps(state))
            await self.db.execute(_SQLITE_UPSERT, params)

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Upsert the state with the user's message (a new row for the turn)."""
        apply_user(self.states[spec.conversation_id], turn)
        await self._save(spec, turn)

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Upsert the state with the reply (the same row, version + 1)."""
        apply_turn(self.states[spec.conversation_id], turn)
        await self._save(spec, turn)

    async def _latest(self, spec: ConversationSpec) -> dict[str, Any]:
        rows = await self.db.execute(self._recover, (_id(self.db, spec.conversation_id),))
        state: dict[str, Any] = _json_value(rows[0][0])
        return state

    async def read_latest(self, spec: ConversationSpec) -> int:
        """The latest row's state."""
        return len((await self._latest(spec))["conversation"])

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """The article's recovery: latest row, parse, check config and tools."""
        state = await self._latest(spec)
        check_config(spec, state["agent_config"], state["tool_registry"])
        conversation: list[dict[str, Any]] = state["conversation"]
        return len(conversation), conversation[-1]["content"]

    async def close(self) -> None:
        """Close the connections."""
        await self.db.close()


class NaiveRun:
    """Seed 001's "full state every step": one full JSON row per step, kept forever."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._insert = _sql(db, _RUN_INSERT)
        self._latest = _sql(db, _RUN_LATEST)

    async def run(self, spec: LongRunSpec, sample: Latencies) -> None:
        """Insert the initial state, then one full state per step."""
        rid = _id(self.db, spec.run_id)
        state = dict(spec.initial)
        await self.db.execute(self._insert, (rid, 0, None, _json_param(self.db, state)))
        for number, changes in enumerate(spec.steps, start=1):
            start = time.perf_counter()
            state.update(changes)
            await self.db.execute(
                self._insert, (rid, number, number - 1, _json_param(self.db, state))
            )
            sample.add(time.perf_counter() - start)

    async def read_latest(self, spec: LongRunSpec) -> dict[str, Any]:
        """The newest row's state."""
        rows = await self.db.execute(self._latest, (_id(self.db, spec.run_id),))
        state: dict[str, Any] = _json_value(rows[0][0])
        return state

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """The same read: the newest row is the whole state."""
        return await self.read_latest(spec)

    async def close(self) -> None:
        """Close the connections."""
        await self.db.close()


class SeedMethod:
    """Subject (a): the seed articles' methods."""

    name = "seed000"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(a) seed-000"

    def unavailable(self, dialect: str) -> str | None:
        """Always available."""
        return None

    async def conversations(self, place: Place) -> SeedConversations:
        """Create the article's table and return the subject."""
        db = await open_database(place)
        await db.script(
            _PG_CONVERSATION_DDL if place.dialect == "postgresql" else _SQLITE_CONVERSATION_DDL
        )
        return SeedConversations(db)

    async def long_run(self, place: Place) -> NaiveRun:
        """Create seed 001's table and return the subject."""
        db = await open_database(place)
        await db.script(_PG_RUN_DDL if place.dialect == "postgresql" else _SQLITE_RUN_DDL)
        return NaiveRun(db)
