"""Baseline (c): LangGraph's own checkpointers, ``AsyncPostgresSaver`` and ``AsyncSqliteSaver``.

Modelled, not driven through a compiled graph: each write is one ``aput`` of a checkpoint
built the way LangGraph's Pregel loop builds them (``empty_checkpoint`` /
``create_checkpoint``, a new channel version from the saver's ``get_next_version`` for
every channel that changed). The state's keys are channels: ``messages`` (the seed 000
``conversation`` list; as LangGraph's messages channel, the whole list is a new value,
hence a new blob version, each time it changes), ``agent_config``, ``tool_registry``,
``metadata`` and ``version``; for the long run, its 30 keys. Messages are plain dicts,
not LangChain message objects, and no ``aput_writes`` (pending writes) are made; a real
graph would store more per step, so these figures flatter LangGraph.

One saver serves all agents, as in a LangGraph application: on PostgreSQL over a psycopg
pool of the same size as agentckpt's (the saver serializes its calls with an
``asyncio.Lock`` of its own); on SQLite over one ``aiosqlite`` connection, in WAL mode
with ``synchronous=FULL`` like the other SQLite subjects.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

from agentckpt.bench.extra import INSTALL
from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.base import Place, check_config
from agentckpt.bench.subjects.connections import open_pg_pool, sqlite_pragmas
from agentckpt.bench.workload import (
    ConversationSpec,
    TurnSpec,
    apply_turn,
    apply_user,
    initial_state,
)

__all__ = ["LangGraphSavers"]


@dataclass(slots=True)
class _Thread:
    """One LangGraph thread: its config (the parent checkpoint id) and last checkpoint."""

    config: dict[str, Any]
    checkpoint: Any
    step: int = -1
    state: dict[str, Any] = field(default_factory=dict)


class _Saver:
    """The pieces of LangGraph's write path that the two workloads share."""

    def __init__(self, saver: Any, close: Any) -> None:
        self.saver = saver
        self._close = close

    def thread(self, thread_id: str) -> _Thread:
        from langgraph.checkpoint.base import empty_checkpoint

        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        return _Thread(config=config, checkpoint=empty_checkpoint())

    async def put(self, thread: _Thread, changed: dict[str, Any]) -> None:
        """One ``aput``: a new version of each changed channel, as the Pregel loop makes."""
        from langgraph.checkpoint.base import copy_checkpoint, create_checkpoint

        checkpoint = copy_checkpoint(thread.checkpoint)
        versions = checkpoint["channel_versions"]
        new_versions: dict[str, Any] = {}
        for channel, value in changed.items():
            new_versions[channel] = self.saver.get_next_version(versions.get(channel), None)
            versions[channel] = new_versions[channel]
            checkpoint["channel_values"][channel] = value
        checkpoint["versions_seen"]["agent"] = dict(versions)
        thread.step += 1
        checkpoint = create_checkpoint(checkpoint, None, thread.step)
        metadata = {"source": "loop", "step": thread.step, "parents": {}}
        thread.config = await self.saver.aput(thread.config, checkpoint, metadata, new_versions)
        thread.checkpoint = checkpoint

    async def values(self, thread_id: str) -> dict[str, Any]:
        """The latest checkpoint's channel values, read fresh (``aget_tuple``)."""
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found = await self.saver.aget_tuple(config)
        values: dict[str, Any] = found.checkpoint["channel_values"]
        return values

    async def close(self) -> None:
        await self._close()


class LangGraphConversations(_Saver):
    """A conversation as a LangGraph thread: one ``aput`` per write."""

    def __init__(self, saver: Any, close: Any) -> None:
        super().__init__(saver, close)
        self.threads: dict[Any, _Thread] = {}

    async def start(self, spec: ConversationSpec) -> None:
        """Nothing is written before the first turn."""
        thread = self.thread(str(spec.conversation_id))
        thread.state = initial_state(spec)
        self.threads[spec.conversation_id] = thread

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """A checkpoint with a new ``messages`` version (all channels on the first write)."""
        thread = self.threads[spec.conversation_id]
        state = thread.state
        apply_user(state, turn)
        if thread.step < 0:
            changed = {
                "version": state["version"],
                "messages": list(state["conversation"]),
                "agent_config": state["agent_config"],
                "tool_registry": state["tool_registry"],
                "metadata": dict(state["metadata"]),
            }
        else:
            changed = {"messages": list(state["conversation"])}
        await self.put(thread, changed)

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """A checkpoint with new ``messages`` and ``metadata`` versions."""
        thread = self.threads[spec.conversation_id]
        state = thread.state
        apply_turn(state, turn)
        changed = {"messages": list(state["conversation"]), "metadata": dict(state["metadata"])}
        await self.put(thread, changed)

    async def read_latest(self, spec: ConversationSpec) -> int:
        """``aget_tuple`` of the thread."""
        return len((await self.values(str(spec.conversation_id)))["messages"])

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """``aget_tuple``, then the config and tools check."""
        values = await self.values(str(spec.conversation_id))
        check_config(spec, values["agent_config"], values["tool_registry"])
        messages: list[dict[str, Any]] = values["messages"]
        return len(messages), messages[-1]["content"]


class LangGraphRun(_Saver):
    """A long run as a LangGraph thread whose channels are the state's keys."""

    async def run(self, spec: LongRunSpec, sample: Latencies) -> None:
        """Step 0 writes every channel; each step a new version of the changed ones."""
        thread = self.thread(str(spec.run_id))
        await self.put(thread, dict(spec.initial))
        for changes in spec.steps:
            start = time.perf_counter()
            await self.put(thread, dict(changes))
            sample.add(time.perf_counter() - start)

    async def read_latest(self, spec: LongRunSpec) -> dict[str, Any]:
        """``aget_tuple`` of the thread."""
        return await self.values(str(spec.run_id))

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """The same read."""
        return await self.values(str(spec.run_id))


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


class LangGraphSavers:
    """Subject (c): LangGraph's PostgreSQL or SQLite checkpointer."""

    name = "langgraph"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(c) langgraph-" + ("postgres" if dialect == "postgresql" else "sqlite")

    def unavailable(self, dialect: str) -> str | None:
        """Why the saver cannot run: its package is not installed."""
        if dialect == "postgresql" and _missing("langgraph.checkpoint.postgres"):
            return f"langgraph-checkpoint-postgres is not installed ({INSTALL})"
        if dialect == "sqlite" and (
            _missing("langgraph.checkpoint.sqlite") or _missing("aiosqlite")
        ):
            return f"langgraph-checkpoint-sqlite is not installed ({INSTALL})"
        return None

    async def open_saver(self, place: Place) -> tuple[Any, Any]:
        """The set-up saver on ``place`` and the call that closes its connections."""
        if place.dialect == "postgresql":
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.rows import dict_row

            # LangGraph's documented pool settings: autocommit, no prepared statements,
            # dict rows.
            pool = await open_pg_pool(place, prepare_threshold=0, row_factory=dict_row)
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            return saver, pool.close
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await aiosqlite.connect(place.location)
        for pragma in sqlite_pragmas():
            await conn.execute(pragma)
        sqlite_saver = AsyncSqliteSaver(conn)
        await sqlite_saver.setup()
        return sqlite_saver, conn.close

    async def conversations(self, place: Place) -> LangGraphConversations:
        """Set the saver up and return the subject."""
        return LangGraphConversations(*await self.open_saver(place))

    async def long_run(self, place: Place) -> LangGraphRun:
        """Set the saver up and return the subject."""
        return LangGraphRun(*await self.open_saver(place))
