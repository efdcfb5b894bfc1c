"""The conversation recovery worker: claims conversations whose writer died mid-turn and
replays their pending user message through a registered agent (async source;
``recovery_worker.py`` is generated from it by ``scripts/unasync.py``).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agentckpt import _compat
from agentckpt.conversation import queries
from agentckpt.conversation.conversations_async import AsyncConversations
from agentckpt.conversation.model import AgentConfig, tool_list
from agentckpt.conversation.records import RecoveredConversation
from agentckpt.conversation.turn_async import AsyncConversation
from agentckpt.errors import InvalidValueError
from agentckpt.store.arguments import check_seconds, check_text

__all__ = ["AsyncConversationRecoveryWorker"]

log = logging.getLogger("agentckpt.conversation")

Factory = Callable[[AsyncConversation], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class _Agent:
    factory: Factory
    agent_config: AgentConfig | Mapping[str, Any]
    tools: list[Any]


class AsyncConversationRecoveryWorker:
    """Resumes conversations cut off mid-turn, through factories registered per agent id.

    An orphan is an ``active`` conversation whose last turn is open (its user message is
    durable, its reply is not complete), with no write or heartbeat for
    ``idle_seconds`` and no live lease of another recovery worker. The worker claims
    one at a time with a single conditional UPDATE (``FOR UPDATE SKIP LOCKED`` on
    PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so any number of workers may poll
    together and each orphan goes to one.
    The claim bumps the conversation's lease epoch: every handle opened before it
    (the writer presumed dead, should it wake up) is fenced, its next write refused.

    The worker opens the conversation under the new epoch with the agent's registered
    ``agent_config`` and ``tools``, drops the partial reply (the turn is replayed, as
    after any crash mid-reply), and hands the handle to the factory, whose agent
    answers the pending user message (the last of ``conv.messages``) and completes
    the turn::

        async def answer(conv):
            reply = await my_model(conv.messages)
            await conv.add_assistant_message(reply)   # seals the turn

        worker = AsyncConversationRecoveryWorker(conversations)
        worker.register("weather-agent", answer, agent_config=CONFIG, tools=TOOLS)
        await worker.recover_once()

    An exception from the factory (or a config drift) is logged and reported; the
    conversation is claimed again, by any worker, once this worker's lease expires.
    """

    def __init__(
        self,
        conversations: AsyncConversations,
        *,
        owner: str | None = None,
        lease_ttl: float = 30.0,
        idle_seconds: float = 30.0,
    ) -> None:
        self.conversations = conversations
        self.store = conversations.store
        if owner is not None:
            check_text("owner", owner)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_ttl = check_seconds("lease_ttl", lease_ttl)
        if self.lease_ttl <= 0:
            raise InvalidValueError("", f"lease_ttl must be > 0 seconds, got {lease_ttl!r}")
        self.idle_seconds = check_seconds("idle_seconds", idle_seconds)
        self._agents: dict[str, _Agent] = {}

    def register(
        self,
        agent_id: str,
        factory: Factory,
        *,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
    ) -> None:
        """Resume orphaned conversations of ``agent_id`` with ``factory``, opened with
        this ``agent_config`` and ``tools`` (a drift from the stored ones is an error)."""
        check_text("agent_id", agent_id)
        AgentConfig.coerce(agent_config)  # refused now, not at the first recovery
        self._agents[agent_id] = _Agent(factory, agent_config, tool_list(tools))

    async def recover_once(self, *, limit: int = 10) -> list[RecoveredConversation]:
        """Claim and resume orphans one at a time, at most ``limit``; what happened to each."""
        done: list[RecoveredConversation] = []
        while self._agents and len(done) < limit:
            rows = await self.store.backend.write(
                queries.CLAIM_ORPHANS,
                {
                    "owner": self.owner,
                    "ttl": self.lease_ttl,
                    "idle": self.idle_seconds,
                    "agent_ids": orjson.dumps(sorted(self._agents)).decode(),
                    "limit": 1,
                },
            )
            if not rows:
                break
            row = rows[0]
            done.append(await self._resume(row["run_id"], row["agent_id"], row["lease_epoch"]))
        return done

    async def _resume(self, rid: Any, agent_id: str, epoch: int) -> RecoveredConversation:
        agent = self._agents[agent_id]
        log.info("recovering conversation %s of %r at epoch %d", rid, agent_id, epoch)
        try:
            conv = await self.conversations.open(
                rid, agent_config=agent.agent_config, tools=agent.tools
            )
            if conv.turn_open:
                conv.discard_partial()  # replay the turn from its user message
            result = await agent.factory(conv)
        except Exception as exc:
            log.exception("recovery of conversation %s failed", rid)
            return RecoveredConversation(rid, agent_id, epoch, error=exc)
        return RecoveredConversation(rid, agent_id, epoch, result=result)

    async def run_forever(
        self, *, poll_interval: float = 5.0, stop: Callable[[], bool] = lambda: False
    ) -> None:
        """Poll for orphans every ``poll_interval`` seconds until ``stop()`` is true."""
        while not stop():
            recovered = await self.recover_once()
            if not recovered and not stop():
                await _compat.sleep_async(poll_interval)
