# GENERATED from conversations_async.py by scripts/unasync.py; do not edit.
"""Conversations on a store: start, open, heartbeats, state upgrades (async source;
``conversations.py`` is generated from it by ``scripts/unasync.py``).

A conversation is a run of kind ``conversation`` whose steps are its turns and whose
state follows the format in :mod:`agentckpt.conversation.model`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from agentckpt._core.versions import StateMigrations
from agentckpt.conversation import queries
from agentckpt.conversation.model import (
    AgentConfig,
    ConversationMetadata,
    ConversationState,
    tool_list,
)
from agentckpt.conversation.options import ConversationOptions
from agentckpt.conversation.reader import KIND, ConversationReader, Rerun
from agentckpt.conversation.records import StateMigrationReport
from agentckpt.conversation.recovery import Recovery
from agentckpt.conversation.turn import Conversation
from agentckpt.errors import (
    AgentckptError,
    ConflictError,
    RunNotFoundError,
    StaleHeadError,
    StepConflictError,
)
from agentckpt.redaction import Redactor
from agentckpt.store.ride_out import ride_out
from agentckpt.store.store import RunId, Store, as_run_id


class Conversations(ConversationReader):
    """The conversation API on one store.

    ``options`` sets flush interval, blob and archive thresholds; ``clock`` (seconds,
    monotonic) drives the flush interval and is injectable for tests; ``migrations``
    upgrades stored states (default: :func:`~agentckpt.conversation.state_migrations`).

    Example::

        store = Store.connect("sqlite:///agents.db")
        conversations = Conversations(store)
        conv = conversations.start(
            agent_id="weather", agent_config={"model": "llama-3-70b"}, tools=["get_weather"]
        )
        ...
        recovered = conversations.recover(
            conv.conversation_id, agent_config={"model": "llama-3-70b"}, tools=["get_weather"]
        )
    """

    def __init__(
        self,
        store: Store,
        *,
        options: ConversationOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        migrations: StateMigrations | None = None,
        redactors: Sequence[Redactor] = (),
    ) -> None:
        super().__init__(store, migrations=migrations)
        self.options = options or ConversationOptions()
        # Applied to message content, tool arguments and results before each write
        # (agentckpt.redaction); what they removed is recorded per step in the metadata.
        self.redactors: tuple[Redactor, ...] = tuple(redactors)
        self.clock = clock
        self._writers: dict[UUID, int] = {}

    # -- starting and opening ----------------------------------------------------------

    def start(
        self,
        *,
        agent_id: str,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
        metadata: ConversationMetadata | Mapping[str, Any] | None = None,
        conversation_id: RunId | None = None,
    ) -> Conversation:
        """Start a conversation; its heartbeat record (ids, agent config, tool registry,
        metadata) is durable before the first turn, so even a crash then leaves a trace.

        :class:`~agentckpt.errors.StepConflictError` if ``conversation_id`` exists.
        """
        config = AgentConfig.coerce(agent_config)
        meta = ConversationMetadata.coerce(metadata)
        state = ConversationState(
            agent_config=config, tool_registry=tool_list(tools), metadata=meta
        )
        run = self.store.create_run(
            conversation_id,
            agent_id=agent_id,
            kind=KIND,
            config={
                "agent_config": config.to_json(),
                "tool_registry": state.tool_registry,
                "metadata": meta.to_json(),
            },
            metadata=meta.rollup(),
        )
        return self._handle(
            run.run_id, agent_id, state, None, False, 0, 0, None, epoch=run.lease_epoch
        )

    def open(
        self,
        conversation_id: RunId,
        *,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
        accept_drift: bool = False,
        rerun: Rerun | None = None,
    ) -> Conversation:
        """Recover a conversation (see :meth:`recover`) and return it ready to continue.

        It reads the hot state only, in one query: archived turns stay unread (the
        handle's ``recovery`` holds the hot messages, ``recovery.unread_history`` counts
        the others; ``all_messages()`` or :meth:`history` read them when wanted), so
        opening costs what the hot state holds (about ``archive_threshold`` at most),
        however long the conversation.

        A pending turn stays open: continue it (its finished tool calls kept) or call
        ``discard_partial()`` to replay it. Dangling calls are closed (or re-run) and
        the repair, a format upgrade and accepted drift (the runtime's config and tools
        become the conversation's) are written with the next write.
        """
        tools = tool_list(tools)
        recovery, stored = self._recover(
            as_run_id(conversation_id),
            agent_config=agent_config,
            tools=tools,
            accept_drift=accept_drift,
            rerun=rerun,
            include_history=False,
        )
        # Only the hot messages were read: none of the archived ones are in the lists.
        archived = recovery.state.archived_messages - recovery.unread_history
        # The handle continues from the recovered message objects themselves: the state
        # read from the store is already this process's own copy, so nothing copies it
        # again (only the small config and metadata records are the handle's own).
        hot = recovery.model_messages[archived:]
        state = recovery.state.copy(conversation=hot)
        if recovery.differences:
            state.agent_config = AgentConfig.coerce(agent_config)
            state.tool_registry = tools
        pending = recovery.pending
        turn_start = len(hot) if pending is None else pending.start - archived
        # The completed turns as stored are the handle's cached JSON of them, except a
        # message that recovery repaired (a dangling call closed), which is encoded anew.
        as_stored = recovery.messages[archived:]
        sealed = [
            doc if hot[i] is as_stored[i] else hot[i].to_json()
            for i, doc in enumerate(stored[:turn_start])
        ]
        return self._handle(
            recovery.conversation_id,
            recovery.agent_id,
            state,
            recovery.step,
            pending is not None,
            turn_start,
            recovery.state_bytes,
            recovery,
            sealed,
            epoch=recovery.lease_epoch,
        )

    def open_or_start(
        self,
        conversation_id: RunId,
        *,
        agent_id: str,
        agent_config: AgentConfig | Mapping[str, Any],
        tools: Iterable[Any],
        metadata: ConversationMetadata | Mapping[str, Any] | None = None,
        accept_drift: bool = False,
        rerun: Rerun | None = None,
    ) -> Conversation:
        """:meth:`open` the conversation if it exists, else :meth:`start` it with this id."""
        tools = tool_list(tools)
        try:
            return self.open(
                conversation_id,
                agent_config=agent_config,
                tools=tools,
                accept_drift=accept_drift,
                rerun=rerun,
            )
        except RunNotFoundError:
            pass
        try:
            return self.start(
                agent_id=agent_id,
                agent_config=agent_config,
                tools=tools,
                metadata=metadata,
                conversation_id=conversation_id,
            )
        except StepConflictError:  # another process started it just now
            return self.open(
                conversation_id,
                agent_config=agent_config,
                tools=tools,
                accept_drift=accept_drift,
                rerun=rerun,
            )

    # -- liveness --------------------------------------------------------------------

    def heartbeat(self, conversation_id: RunId) -> datetime:
        """Refresh the conversation's heartbeat; returns the database's time of it."""
        rid = as_run_id(conversation_id)
        rows = ride_out(
            self.store.outage,
            lambda: self.store.backend.write(queries.HEARTBEAT, {"run_id": rid}),
            what=f"conversation {rid}",
        )
        if not rows:
            raise RunNotFoundError(f"no conversation {rid}")
        heartbeat_at: datetime = rows[0]["heartbeat_at"]
        return heartbeat_at

    def end(self, conversation_id: RunId, status: str = "completed") -> None:
        """Mark a conversation finished; it is no longer listed as an orphan."""
        self.store.set_status(conversation_id, status)

    # -- state format upgrades -------------------------------------------------------

    def migrate_states(self, *, batch_size: int = 100) -> StateMigrationReport:
        """Upgrade every conversation whose latest state has an older format version.

        A sealed head gets the upgraded state as one new step; an open head (a turn in
        progress) is rewritten in place, so it stays pending. A conversation moved on by
        a writer meanwhile is reported in ``conflicts`` and left for the next run.
        """
        report = StateMigrationReport()
        after: UUID | None = None
        while True:
            rows = self.store.backend.read(
                queries.TO_UPGRADE,
                {"current": self.migrations.current, "after": after, "limit": batch_size},
            )
            for row in rows:
                rid = after = row["run_id"]
                report.scanned += 1
                try:
                    loaded = self._load(rid)
                    if loaded.upgraded_from is None or loaded.step is None:
                        report.already_current += 1
                        continue
                    self.store.commit(
                        rid,
                        loaded.document,
                        step=loaded.step if loaded.is_open else loaded.step + 1,
                        keep_open=loaded.is_open,
                        expected_head=loaded.step,
                    )
                    report.upgraded += 1
                except ConflictError:
                    report.conflicts.append(rid)
                except AgentckptError as exc:
                    report.failed[rid] = str(exc)
            if len(rows) < batch_size:
                return report

    # -- internals -------------------------------------------------------------------

    def _handle(
        self,
        rid: UUID,
        agent_id: str,
        state: ConversationState,
        step: int | None,
        is_open: bool,
        turn_start: int,
        state_bytes: int,
        recovery: Recovery | None,
        sealed: list[dict[str, Any]] | None = None,
        *,
        epoch: int,
    ) -> Conversation:
        generation = self._writers.get(rid, 0) + 1
        self._writers[rid] = generation
        return Conversation(
            self,
            rid,
            agent_id,
            state,
            step=step,
            is_open=is_open,
            turn_start=turn_start,
            state_bytes=state_bytes,
            generation=generation,
            recovery=recovery,
            sealed=sealed,
            epoch=epoch,
        )

    def _check_writer(self, rid: UUID, generation: int) -> None:
        if self._writers.get(rid) != generation:
            raise StaleHeadError(
                f"conversation {rid}: this handle was superseded by a newer one for the "
                "same conversation; nothing was written, use the newer handle"
            )


__all__ = ["Conversation", "Conversations"]
