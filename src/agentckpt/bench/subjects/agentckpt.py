"""The subject under test: agentckpt, used through its public APIs as a user would.

Conversations go through :class:`~agentckpt.conversation.AsyncConversations`: ``start``
(the heartbeat record, not timed), ``add_user_message`` (durable before the model would
be called) and ``add_assistant_message`` with the turn's tool calls and usage (the
completed turn, sealed in one commit; results over the API's ``blob_threshold`` go to the
blob store in that same commit). Resume is ``open`` on a new ``AsyncConversations``: what a
restarted process does to continue the conversation (the hot state in one query, config
and tool check, pending turn and dangling calls; archived turns stay unread). The full
read, ``recover`` with every archived message, is timed beside it (``resume_all``).

The long run goes through :class:`~agentckpt.runs.AsyncAgentRun` (lease, heartbeat,
delta steps, a snapshot every 20 steps, or up to 80 for a large state changed a little,
that prunes what came before); resume is
``AsyncStore.latest`` on a new store object sharing the connections (no cached head).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from uuid import UUID

from agentckpt.bench.errors import ResultMismatchError
from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.workload import (
    ConversationSpec,
    TurnSpec,
    apply_turn,
    apply_user,
    initial_state,
)
from agentckpt.conversation import AsyncConversation, AsyncConversations, ToolCall, state_migrations
from agentckpt.runs import AsyncAgentRun, AsyncStepContext
from agentckpt.store.store_async import AsyncStore

__all__ = ["Agentckpt", "AgentckptOverlap", "AgentckptStoreCommits", "store_url"]

SNAPSHOT_INTERVAL = 20


def store_url(place: Place) -> str:
    """The agentckpt store URL of ``place``, with a pool the size of the baselines'."""
    if place.dialect == "sqlite":
        return f"sqlite:///{place.location}"
    parts = urlsplit(place.location)
    query = [
        *parse_qsl(parts.query),
        ("schema", place.name),
        ("pool_min", str(place.pool_size)),
        ("pool_max", str(place.pool_size)),
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


class AgentckptConversations:
    """Conversations through ``AsyncConversations``."""

    def __init__(self, store: AsyncStore) -> None:
        self.store = store
        self.conversations = AsyncConversations(store)
        self.handles: dict[UUID, AsyncConversation] = {}

    async def start(self, spec: ConversationSpec) -> None:
        """``start``: the conversation's heartbeat record (ids, config, tools, metadata)."""
        self.handles[spec.conversation_id] = await self.conversations.start(
            agent_id=spec.agent_id,
            agent_config=spec.agent_config,
            tools=spec.tool_registry,
            metadata=spec.metadata,
            conversation_id=spec.conversation_id,
        )

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """``add_user_message``: one commit, the turn's step left open."""
        await self.handles[spec.conversation_id].add_user_message(
            turn.user_content, timestamp=turn.user_timestamp
        )

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """``add_assistant_message`` with tool calls and usage: one commit, turn sealed."""
        calls = [
            ToolCall(c.tool_name, c.arguments, result=c.result, duration_ms=c.duration_ms)
            for c in turn.tool_calls
        ]
        await self.handles[spec.conversation_id].add_assistant_message(
            turn.assistant_content,
            tool_calls=calls or None,
            timestamp=turn.assistant_timestamp,
            input_tokens=turn.input_tokens,
            output_tokens=turn.output_tokens,
            cost_usd=turn.cost_usd,
        )

    async def read_latest(self, spec: ConversationSpec) -> int:
        """``AsyncStore.latest``: the newest state (snapshot plus deltas, one query)."""
        checkpoint = await self.store.latest(spec.conversation_id)
        if checkpoint is None:
            raise ResultMismatchError(f"conversation {spec.conversation_id} has no step")
        return len(checkpoint.state["conversation"])

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """``open`` from a new ``AsyncConversations``, ready to write the next turn: the
        hot state read and decoded in one query, config and tools checked, a pending turn
        and dangling tool calls detected (blobs stay lazy, archived turns unread: the
        count is the archive's bookkeeping plus the hot messages)."""
        conv = await AsyncConversations(self.store).open(
            spec.conversation_id, agent_config=spec.agent_config, tools=spec.tool_registry
        )
        return conv.state.archived_messages + len(conv.messages), conv.messages[-1].content

    async def resume_all(self, spec: ConversationSpec) -> tuple[int, Any]:
        """``recover`` from a new ``AsyncConversations``: as :meth:`resume`, and every
        archived message read from the history rows and decoded too."""
        recovery = await AsyncConversations(self.store).recover(
            spec.conversation_id, agent_config=spec.agent_config, tools=spec.tool_registry
        )
        return len(recovery.messages), recovery.messages[-1].content

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()


class AgentckptStoreCommits:
    """Conversations through a bare ``AsyncStore.commit`` of the full seed 000 state, as
    LangGraph's saver and generic users call it: no hint of what changed, each commit a
    new state object whose only change is the appended message (and the usage)."""

    def __init__(self, store: AsyncStore) -> None:
        self.store = store
        self.states: dict[UUID, dict[str, Any]] = {}

    async def start(self, spec: ConversationSpec) -> None:
        """The run record."""
        await self.store.create_run(spec.conversation_id, agent_id=spec.agent_id)
        self.states[spec.conversation_id] = initial_state(spec)

    async def _commit(self, spec: ConversationSpec) -> None:
        state = self.states[spec.conversation_id]
        # A new top-level object, list and metadata each commit (shared message dicts),
        # as a framework hands over a state it rebuilt.
        fresh = state | {
            "conversation": list(state["conversation"]),
            "metadata": dict(state["metadata"]),
        }
        self.states[spec.conversation_id] = fresh
        await self.store.commit(spec.conversation_id, fresh)

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Commit the state with the user's message appended."""
        apply_user(self.states[spec.conversation_id], turn)
        await self._commit(spec)

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Commit the state with the reply appended and the usage updated."""
        apply_turn(self.states[spec.conversation_id], turn)
        await self._commit(spec)

    async def read_latest(self, spec: ConversationSpec) -> int:
        """``AsyncStore.latest``."""
        checkpoint = await self.store.latest(spec.conversation_id)
        if checkpoint is None:
            raise ResultMismatchError(f"conversation {spec.conversation_id} has no step")
        return len(checkpoint.state["conversation"])

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """``latest`` on a new store object (no head cache)."""
        store = AsyncStore(self.store.backend, policy=self.store.policy)
        checkpoint = await store.latest(spec.conversation_id)
        if checkpoint is None:
            raise ResultMismatchError(f"conversation {spec.conversation_id} has no step")
        conversation = checkpoint.state["conversation"]
        return len(conversation), conversation[-1]["content"]

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()


class AgentckptRun:
    """The long run through ``AsyncAgentRun``; ``overlap``: with ``overlap=True``."""

    def __init__(
        self, store: AsyncStore, *, overlap: bool = False, ahead: int | None = None
    ) -> None:
        self.store = store
        self.overlap = overlap
        self.ahead = ahead

    async def run(self, spec: LongRunSpec, sample: Latencies) -> None:
        """Drive the run loop; each step's latency runs from the step function's call to
        the loop handing back the durable step. Overlapped (``overlap=True``), step N+1
        starts before step N is handed back, so each step's start is kept until its own
        step is."""
        started: dict[int, float] = {}

        async def step(ctx: AsyncStepContext) -> Any:
            started[ctx.step] = time.perf_counter()
            ctx.state.update(spec.steps[ctx.step - 1])
            return ctx.state

        agent_run = AsyncAgentRun(
            self.store,
            spec.run_id,
            agent_id="long-run",
            initial_state=dict(spec.initial),
            snapshot_interval=SNAPSHOT_INTERVAL,
            overlap=self.overlap,
            ahead=self.ahead,
        )
        async with agent_run:
            async for info in agent_run.steps(step, max_steps=len(spec.steps)):
                if info.step > 0:
                    sample.add(time.perf_counter() - started.pop(info.step))

    async def read_latest(self, spec: LongRunSpec) -> dict[str, Any]:
        """``AsyncStore.latest``."""
        return await self._latest(self.store, spec)

    async def resume(self, spec: LongRunSpec) -> dict[str, Any]:
        """``latest`` on a new store object (no head cache), as a restarted worker reads."""
        return await self._latest(AsyncStore(self.store.backend, policy=self.store.policy), spec)

    @staticmethod
    async def _latest(store: AsyncStore, spec: LongRunSpec) -> dict[str, Any]:
        checkpoint = await store.latest(spec.run_id)
        if checkpoint is None:
            raise ResultMismatchError(f"run {spec.run_id} has no step")
        state: dict[str, Any] = checkpoint.state
        return state

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()


class Agentckpt:
    """The subject under test."""

    name = "agentckpt"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "agentckpt"

    def unavailable(self, dialect: str) -> str | None:
        """Always available."""
        return None

    async def conversations(self, place: Place) -> AgentckptConversations:
        """Connect (migrating the fresh schema) and return the subject; the store knows
        the conversation format's versions, so ``latest`` reads conversation states."""
        store = await AsyncStore.connect(store_url(place), migrations=state_migrations())
        return AgentckptConversations(store)

    async def store_commits(self, place: Place) -> AgentckptStoreCommits:
        """The hint-free ``Store.commit`` subject (curves only)."""
        return AgentckptStoreCommits(await AsyncStore.connect(store_url(place)))

    async def long_run(self, place: Place) -> AgentckptRun:
        """Connect (migrating the fresh schema) and return the subject."""
        return AgentckptRun(await AsyncStore.connect(store_url(place)))


class AgentckptOverlap(Agentckpt):
    """The subject under test, its long run with ``overlap=True`` (``--overlap``). It runs
    no conversation workload: overlap is the run loop's, so its conversations would be
    the default subject's code path measured again, a column of the same figures."""

    name = "agentckpt_overlap"
    has_conversations = False

    def __init__(self, *, ahead: int | None = None) -> None:
        self.ahead = ahead

    def label(self, dialect: str) -> str:
        """Column header."""
        return "agentckpt overlap"

    async def long_run(self, place: Place) -> AgentckptRun:
        """As :meth:`Agentckpt.long_run`, the run loop overlapping steps."""
        store = await AsyncStore.connect(store_url(place))
        return AgentckptRun(store, overlap=True, ahead=self.ahead)
