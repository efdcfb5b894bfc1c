"""Reading conversations back: recovery, history, blob results, orphans (async source;
``reader.py`` is generated from it by ``scripts/unasync.py``).

:class:`AsyncConversationReader` never writes a turn, so inspectors and recovery
workers can use it alone; :class:`~agentckpt.conversation.conversations_async.AsyncConversations`
adds the writing side.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentckpt._core.blobs import BlobRef
from agentckpt._core.versions import StateMigrations
from agentckpt.conversation import queries
from agentckpt.conversation.archive import stitch_segments
from agentckpt.conversation.messages import read_messages
from agentckpt.conversation.model import (
    AgentConfig,
    BlobLoader,
    ConversationState,
    Message,
    ToolCall,
    tool_list,
)
from agentckpt.conversation.records import OrphanConversation
from agentckpt.conversation.recovery import (
    Recovery,
    close_dangling,
    config_drift,
    find_dangling,
    find_pending,
    interrupted_result,
)
from agentckpt.conversation.upgrades import state_migrations
from agentckpt.crypto.sealing import HISTORY
from agentckpt.errors import ConfigDriftError, RunNotFoundError
from agentckpt.ops import kinds
from agentckpt.records import RunInfo
from agentckpt.store.ride_out_async import ride_out_async
from agentckpt.store.store_async import AsyncStore, RunId, as_run_id

KIND = kinds.CONVERSATION

Rerun = Callable[[ToolCall], Awaitable[Any]]
"""Re-runs a dangling tool call and returns its result (see ``recover(rerun=...)``)."""


@dataclass(slots=True)
class _Loaded:
    run: RunInfo
    document: dict[str, Any]
    state: ConversationState
    step: int | None
    is_open: bool
    write_version: int
    state_bytes: int
    upgraded_from: int | None


class AsyncConversationReader:
    """Read-only access to the conversations of a store.

    ``migrations`` upgrades stored states to the current format version (default:
    :func:`~agentckpt.conversation.state_migrations`).
    """

    def __init__(self, store: AsyncStore, *, migrations: StateMigrations | None = None) -> None:
        self.store = store
        self.migrations = migrations or state_migrations()

    async def recover(
        self,
        conversation_id: RunId,
        *,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
        accept_drift: bool = False,
        rerun: Rerun | None = None,
        include_history: bool = True,
    ) -> Recovery:
        """Read a conversation back exactly and check it against the runtime.

        Raises :class:`ConfigDriftError` listing every difference between the stored
        agent config and tool registry and ``agent_config`` / ``tools``, unless
        ``accept_drift``. Reports a turn cut off mid-way as ``pending``. Each tool call
        without a result is closed with an error result (``interrupted_result``) or,
        given ``rerun``, re-run through it (it gets the call, returns the result); the
        repaired messages are ``model_messages`` (``messages`` stays exactly as stored).

        ``messages`` holds every message, the archived ones first, read from the
        ``history`` rows. ``include_history=False`` reads only the hot state (one query,
        however long the conversation): ``messages`` then starts after the
        ``unread_history`` archived messages, which :meth:`history` reads on demand. A
        pending turn and a tool call without a result are never archived (a turn is
        archived only once sealed, and sealing refuses a call without a result), so
        both are found either way.
        """
        recovery, _ = await self._recover(
            as_run_id(conversation_id),
            agent_config=agent_config,
            tools=tools,
            accept_drift=accept_drift,
            rerun=rerun,
            include_history=include_history,
        )
        return recovery

    async def _recover(
        self,
        rid: UUID,
        *,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
        accept_drift: bool,
        rerun: Rerun | None,
        include_history: bool,
    ) -> tuple[Recovery, list[Any]]:
        """:meth:`recover`, and the hot messages as stored (the JSON the model was read
        from), which a writer reuses as its encoding of the completed turns."""
        loaded = await self._load(rid)
        tools = tool_list(tools)
        differences = config_drift(loaded.state, agent_config, tools)
        if differences and not accept_drift:
            raise ConfigDriftError(rid, differences)
        messages = await self.history(rid, loaded.state) if include_history else []
        archived = len(messages)
        messages.extend(loaded.state.conversation)
        self._attach(rid, loaded.state.conversation)
        pending = find_pending(messages, head_open=loaded.is_open, head_step=loaded.step)
        if pending is not None and pending.start < archived:
            pending = None  # cannot happen: an open turn is never archived
        dangling = find_dangling(messages, pending_from=pending.start if pending else None)
        results: dict[tuple[int, int], Any] = {}
        for item in dangling:
            key = (item.message_index, item.call_index)
            results[key] = await rerun(item.call) if rerun else interrupted_result(item.call)
        recovery = Recovery(
            conversation_id=rid,
            agent_id=loaded.run.agent_id,
            step=loaded.step,
            write_version=loaded.write_version,
            state_bytes=loaded.state_bytes,
            state=loaded.state,
            messages=messages,
            model_messages=close_dangling(messages, results),
            pending=pending,
            dangling=dangling,
            differences=differences,
            upgraded_from=loaded.upgraded_from,
            lease_epoch=loaded.run.lease_epoch,
            unread_history=loaded.state.archived_messages - archived,
        )
        stored: list[Any] = loaded.document.get("conversation", [])
        return recovery, stored

    async def history(
        self, conversation_id: RunId, state: ConversationState | None = None
    ) -> list[Message]:
        """The archived messages of a conversation, oldest first (empty if none).

        ``state`` (its hot state, if the caller has it) saves reading it again.
        """
        rid = as_run_id(conversation_id)
        if state is None:
            state = (await self._load(rid)).state
        if state.archive is None or state.archive.segments == 0:
            return []
        rows = await self.store.open_rows(
            HISTORY,
            await self.store.backend.read(
                queries.HISTORY, {"run_id": rid, "segments": state.archive.segments}
            ),
            run_id=rid,
        )
        messages = read_messages(stitch_segments(rid, state.archive, rows), "/history")
        self._attach(rid, messages)
        return messages

    async def all_messages(self, conversation_id: RunId) -> list[Message]:
        """Every message of a conversation exactly as stored: archived, then hot."""
        rid = as_run_id(conversation_id)
        state = (await self._load(rid)).state
        messages = await self.history(rid, state)
        self._attach(rid, state.conversation)
        return messages + state.conversation

    async def load_result(self, conversation_id: RunId, call: ToolCall) -> Any:
        """A tool call's result, fetching its blob (sha256-verified) if it has one."""
        ref = call.result_ref
        if call.is_loaded or ref is None:
            return call.result
        rid = as_run_id(conversation_id)
        data = await ride_out_async(
            self.store.outage, lambda: self.store.get_blob(rid, ref), what=f"conversation {rid}"
        )
        return call.cache_result(data)

    async def list_orphans(
        self, older_than_seconds: float, *, limit: int = 100
    ) -> list[OrphanConversation]:
        """Active conversations with no heartbeat (or write) for ``older_than_seconds``,
        stalest first: their writer is presumed dead; recover and continue them."""
        if not older_than_seconds >= 0:
            raise ValueError(f"older_than_seconds must be >= 0, got {older_than_seconds}")
        rows = await self.store.backend.read(
            queries.ORPHANS, {"older_than": float(older_than_seconds), "limit": limit}
        )
        return [
            OrphanConversation(
                conversation_id=row["run_id"],
                agent_id=row["agent_id"],
                head_step=row["head_step"],
                head_open=bool(row["head_open"]),
                heartbeat_at=row["heartbeat_at"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
            for row in rows
        ]

    # -- internals -------------------------------------------------------------------

    def _loader(self, rid: UUID) -> BlobLoader | None:
        """A blob fetcher for lazy ``ToolCall.result`` (sync API); None when async,
        since an attribute access cannot await (``load_result`` does it there)."""
        fetch: Any = self.store.get_blob
        if inspect.iscoroutinefunction(fetch):
            return None

        def load(ref: BlobRef) -> bytes:
            data: bytes = fetch(rid, ref)
            return data

        return load

    def _attach(self, rid: UUID, messages: Iterable[Message]) -> None:
        loader = self._loader(rid)
        if loader is None:
            return
        for message in messages:
            for call in message.tool_calls or ():
                if not call.is_loaded:
                    call.attach_loader(loader)

    async def _load(self, rid: UUID) -> _Loaded:
        # resume_run(): the run's record and its state in one query, and the store's view
        # of the run becomes exactly the state this writer starts from, so a writer that
        # moved the conversation meanwhile makes our next write conflict instead of being
        # overwritten. The state is our own copy: the model is built over it, not copied.
        run, checkpoint = await ride_out_async(
            self.store.outage, lambda: self.store.resume_run(rid), what=f"conversation {rid}"
        )
        if run.kind != KIND:
            raise RunNotFoundError(f"run {rid} is a {run.kind!r} run, not a conversation")
        if checkpoint is not None:
            document: Any = checkpoint.state
            info = checkpoint.info
            step, is_open = info.step, info.is_open
            write_version, state_bytes = info.write_version, info.state_bytes
        else:  # only the heartbeat record: the state it was started with
            config = run.config
            document = {
                "version": self.migrations.current,
                "conversation": [],
                "agent_config": config.get("agent_config", {}),
                "tool_registry": config.get("tool_registry", []),
                "metadata": config.get("metadata", {}),
            }
            step, is_open, write_version, state_bytes = None, False, 0, 0
        version = self.migrations.version_of(document)
        document, changed = self.migrations.upgrade(document)
        return _Loaded(
            run=run,
            document=document,
            state=ConversationState.from_json(document),
            step=step,
            is_open=is_open,
            write_version=write_version,
            state_bytes=state_bytes,
            upgraded_from=version if changed else None,
        )


__all__ = ["KIND", "AsyncConversationReader", "Rerun"]
