# GENERATED from turn_async.py by scripts/unasync.py; do not edit.
"""One open conversation: its turns, streaming and tool calls (async source).

``_sync/conversation_turn.py`` is generated from this file by ``scripts/unasync.py``.

A turn is one step of the run. Adding the user's message commits the step *open*
(durable before the model is called); streamed output and tool calls rewrite that open
step, coalesced; completing the turn commits it *sealed*. Each write of the open step
bumps its ``write_version``, so a second writer is refused with a typed conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from types import EllipsisType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentckpt._core.blobs import is_ref
from agentckpt._core.codec import encode, encode_trusted
from agentckpt._core.writes import BlobRow, HistoryRow
from agentckpt.conversation import queries
from agentckpt.conversation.archive import choose_cut, segment_row
from agentckpt.conversation.coalesce import Coalescer
from agentckpt.conversation.model import ArchiveInfo, ConversationState, Message, ToolCall
from agentckpt.errors import ConflictError, InvalidValueError, StaleHeadError, TurnError
from agentckpt.records import StepInfo

if TYPE_CHECKING:
    from agentckpt.conversation.conversations import Conversations
    from agentckpt.conversation.recovery import Recovery


def now_timestamp() -> str:
    """The default message timestamp: UTC, ISO 8601, milliseconds, ``Z`` (as seed 000)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Conversation:
    """A writable conversation: get one from ``Conversations.start()`` or ``open()``.

    One writer per conversation: a newer handle for the same conversation (from the same
    :class:`Conversations`) supersedes this one, and a writer in another process
    makes this one's next write fail with :class:`~agentckpt.errors.StaleHeadError`.

    Example::

        conv = conversations.start(agent_id="weather", agent_config=cfg, tools=tools)
        conv.add_user_message("What's the weather in Berlin?")   # durable now
        call = conv.start_tool_call("get_weather", {"city": "Berlin"})
        conv.finish_tool_call(call, {"temperature": 12}, duration_ms=340)
        conv.stream("It is 12 degrees ")                         # coalesced
        conv.stream("and cloudy.")
        conv.complete_turn(input_tokens=1523, output_tokens=421)  # durable, sealed
    """

    def __init__(
        self,
        owner: Conversations,
        conversation_id: UUID,
        agent_id: str,
        state: ConversationState,
        *,
        step: int | None,
        is_open: bool,
        turn_start: int,
        state_bytes: int,
        generation: int,
        recovery: Recovery | None = None,
    ) -> None:
        self.conversations = owner
        self.store = owner.store
        self.conversation_id = conversation_id
        self.agent_id = agent_id
        self.state = state
        self.recovery = recovery
        self._generation = generation
        self._step = step
        self._open = is_open
        self._expected: int | EllipsisType | None = step
        self._turn_start = turn_start
        # Completed turns never change: their JSON is built once, not on every write.
        self._sealed = [m.to_json() for m in state.conversation[:turn_start]]
        self._blobs: list[BlobRow] = []
        self._history: list[HistoryRow] = []
        self._recheck_history = False
        self._reply: Message | None = None
        self._state_bytes = state_bytes
        self._coalescer = Coalescer(owner.options.flush_interval, clock=owner.clock)
        self._archived: list[Message] | None = None
        self._lost: ConflictError | None = None

    # -- what the handle knows -------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The messages in the hot state (archived ones: :meth:`all_messages`)."""
        return self.state.conversation

    @property
    def turn(self) -> int | None:
        """The step number of the current (or last) turn; None before the first."""
        return self._step

    @property
    def turn_open(self) -> bool:
        """True between :meth:`add_user_message` and :meth:`complete_turn`."""
        return self._open

    @property
    def dirty(self) -> bool:
        """True when the open turn has changes not written yet."""
        return self._coalescer.dirty

    # -- turns ---------------------------------------------------------------------

    def add_user_message(
        self, content: Any, *, timestamp: str | None = None, extra: dict[str, Any] | None = None
    ) -> StepInfo:
        """Start a turn with the user's message; it is durable when this returns.

        If the commit fails, the turn stays open in memory; :meth:`flush` retries it.
        """
        if self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: turn {self._step} is still open; "
                "complete it before adding the next user message"
            )
        self._archive_if_large()
        message = Message("user", content, timestamp=timestamp or now_timestamp(), extra=extra)
        self.state.conversation.append(message)
        self._turn_start = len(self.state.conversation) - 1
        self._step = (self._step or 0) + 1
        self._open = True
        self._reply = None
        return self._write(seal=False)

    def add_message(self, message: Message) -> bool:
        """Add a message (assistant, tool, system) to the open turn; written coalesced.

        Returns True if it caused a write. Its tool calls' results are offloaded as usual.
        """
        self._require_open()
        if message.role == "user":
            raise TurnError("a user message starts a turn: use add_user_message()")
        for call in message.tool_calls or ():
            self._offload(call)
        self.state.conversation.append(message)
        self._reply = None
        self._coalescer.changed()
        return self.flush_if_due()

    def add_assistant_message(
        self,
        content: Any,
        *,
        tool_calls: Sequence[ToolCall] | None = None,
        timestamp: str | None = None,
        extra: dict[str, Any] | None = None,
        complete: bool = True,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: int | float = 0,
    ) -> StepInfo | None:
        """Add a whole (not streamed) assistant message; with ``complete`` (the default)
        the turn is completed too: one durable write, returning its step."""
        message = Message(
            "assistant",
            content,
            timestamp=timestamp or now_timestamp(),
            tool_calls=None if tool_calls is None else list(tool_calls),
            extra=extra,
        )
        self.add_message(message)
        if not complete:
            return None
        return self.complete_turn(
            input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd
        )

    def begin_reply(
        self, *, timestamp: str | None = None, extra: dict[str, Any] | None = None
    ) -> Message:
        """Start the assistant message that :meth:`stream` and :meth:`start_tool_call`
        add to (they start one themselves if none is in progress)."""
        self._require_open()
        self._reply = Message("assistant", "", timestamp=timestamp or now_timestamp(), extra=extra)
        self.state.conversation.append(self._reply)
        self._coalescer.changed()
        return self._reply

    def stream(self, text: str) -> bool:
        """Append streamed text to the reply being generated; True if it caused a write."""
        reply = self._current_reply()
        if reply.content is not None and not isinstance(reply.content, str):
            raise TurnError("the reply's content is not text; cannot stream text into it")
        reply.content = (reply.content or "") + text
        self._coalescer.changed()
        return self.flush_if_due()

    def start_tool_call(
        self, tool_name: str, arguments: Any = None, *, extra: dict[str, Any] | None = None
    ) -> ToolCall:
        """Record that the reply calls a tool (no result yet: a crash now leaves it
        dangling, which recovery closes or re-runs)."""
        reply = self._current_reply()
        call = ToolCall(tool_name, arguments, extra=extra)
        if reply.tool_calls is None:
            reply.tool_calls = []
        reply.tool_calls.append(call)
        self._coalescer.changed()
        self.flush_if_due()
        return call

    def finish_tool_call(
        self, call: ToolCall, result: Any, *, duration_ms: int | float | None = None
    ) -> StepInfo:
        """Record a tool's result and write the turn at once (a result is costly to redo).

        A result larger than ``blob_threshold`` goes to the blob store in the same
        transaction; the state keeps its reference.
        """
        self._require_open()
        call.set_result(result, duration_ms=duration_ms)
        self._offload(call)
        self._coalescer.changed()
        return self._write(seal=False)

    def end_reply(self) -> None:
        """End the streamed assistant message; the next :meth:`stream` starts a new one."""
        self._reply = None

    def discard_partial(self) -> list[Message]:
        """Drop the open turn's reply so far (to replay the turn from its user message,
        as seed 000 does after a crash); written with the next write. Returns it."""
        self._require_open()
        dropped = self.state.conversation[self._turn_start + 1 :]
        del self.state.conversation[self._turn_start + 1 :]
        self._reply = None
        if dropped:
            self._coalescer.changed()
        return dropped

    def complete_turn(
        self, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: int | float = 0
    ) -> StepInfo:
        """Seal the turn: one durable write; the turn is complete when this returns.

        Token counts and cost are added to the metadata. A tool call still without a
        result is refused (:class:`InvalidValueError` with its path): finish it first,
        even with an error result, so no model ever sees a call without its result.
        """
        self._require_open()
        for i in range(self._turn_start, len(self.state.conversation)):
            for j, call in enumerate(self.state.conversation[i].tool_calls or ()):
                if not call.has_result:
                    raise InvalidValueError(
                        f"/conversation/{i}/tool_calls/{j}",
                        f"tool call {call.tool_name!r} has no result; finish it first",
                    )
        meta = self.state.metadata
        before = (meta.input_tokens, meta.output_tokens, meta.cost_estimate_usd)
        meta.add_usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd)
        try:
            return self._write(seal=True)
        except BaseException:
            # Not sealed (or unknown): a retry with the same usage must not count it twice.
            meta.input_tokens, meta.output_tokens, meta.cost_estimate_usd = before
            raise

    def flush(self) -> StepInfo | None:
        """Write the open turn now (also retries a write that failed); None if none is open."""
        if not self._open:
            return None
        return self._write(seal=False)

    def flush_if_due(self) -> bool:
        """Write the open turn if it changed and ``flush_interval`` has passed; True if so.

        There is no background timer: call this from a long wait to bound what is at
        risk while no new tokens arrive.
        """
        if self._open and self._coalescer.due():
            self._write(seal=False)
            return True
        return False

    # -- reads and liveness ----------------------------------------------------------

    def all_messages(self) -> list[Message]:
        """Every message: the archived ones (read once, then cached) and the hot ones."""
        if self._archived is None:
            self._archived = self.conversations.history(self.conversation_id, self.state)
        return self._archived + self.state.conversation

    def load_result(self, call: ToolCall) -> Any:
        """A tool call's result, fetching (and verifying) its blob if it has one."""
        return self.conversations.load_result(self.conversation_id, call)

    def heartbeat(self) -> datetime:
        """Tell orphan detection this conversation's writer is alive; the database time."""
        return self.conversations.heartbeat(self.conversation_id)

    def end(self, status: str = "completed") -> None:
        """Mark the conversation finished (no longer an orphan candidate)."""
        if self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: turn {self._step} is open; "
                "complete it before ending the conversation"
            )
        self.store.set_status(self.conversation_id, status)

    # -- internals -----------------------------------------------------------------

    def _require_open(self) -> None:
        if not self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: no turn is open; "
                "add_user_message() starts one"
            )

    def _current_reply(self) -> Message:
        return self._reply if self._reply is not None else self.begin_reply()

    def _offload(self, call: ToolCall) -> None:
        """Move a large (or reference-shaped) inline result to a blob of this commit."""
        if not call.has_result or call.result_ref is not None:
            return
        value = call.result
        try:
            # Only measured here; a result that stays inline is validated with the rest
            # of the commit's new content, so validating it now would walk it twice.
            data = encode_trusted(value)
        except (TypeError, ValueError):
            data = encode(value, limits=self.store.limits)  # raises, naming the bad value
        # A result shaped like a blob reference is stored as a blob too, so every
        # reference found in a state is a real one.
        if len(data) > self.conversations.options.blob_threshold or is_ref(value):
            # Leaving the state: validate it (encode_trusted would turn NaN into null).
            data = encode(value, limits=self.store.limits)
            ref, row = self.store.prepare_blob(data)
            call.attach_blob(ref)
            self._blobs.append(row)

    def _archive_if_large(self) -> None:
        """Move the oldest completed turns to history once the state grew too large."""
        options = self.conversations.options
        if self._state_bytes <= options.archive_threshold:
            return
        hot = self.state.conversation
        cut = choose_cut(
            [m.role for m in hot],
            [len(encode_trusted(m)) for m in self._sealed],
            target_bytes=options.target_bytes,
            keep_turns=options.archive_keep_turns,
        )
        if cut == 0:
            return
        info = self.state.archive or ArchiveInfo()
        self._history.append(segment_row(info.segments, self._sealed[:cut]))
        info.messages += cut
        info.segments += 1
        self.state.archive = info
        if self._archived is not None:
            self._archived.extend(hot[:cut])
        del hot[:cut]
        del self._sealed[:cut]
        self._turn_start -= cut

    def _write(self, *, seal: bool) -> StepInfo:
        self.conversations._check_writer(self.conversation_id, self._generation)
        if self._lost is not None:
            raise StaleHeadError(
                f"conversation {self.conversation_id}: another writer moved it on "
                f"({self._lost}); nothing was written, open it again"
            )
        if self._recheck_history and self._history:
            # The last write's outcome was unknown: do not send a segment twice.
            stored = self.store.backend.read(
                queries.HISTORY_SEQS,
                {"run_id": self.conversation_id, "from_seq": self._history[0].seq},
            )
            done = {row["seq"] for row in stored}
            self._history = [row for row in self._history if row.seq not in done]
        assert self._step is not None
        open_turn = [m.to_json() for m in self.state.conversation[self._turn_start :]]
        document = self.state.to_json(conversation=self._sealed + open_turn)
        try:
            info = self.store.commit(
                self.conversation_id,
                document,
                step=self._step,
                keep_open=not seal,
                expected_head=self._expected,
                blobs=self._blobs,
                history=self._history,
                metadata=self.state.metadata.rollup() if seal else None,
            )
        except ConflictError as exc:
            # Another writer moved the conversation: this handle's view is stale for good
            # (a retry would write over the other writer's turn).
            self._lost = exc
            raise
        except BaseException:
            # Unknown whether it landed: the next write re-reads the head instead.
            self._expected = ...
            self._recheck_history = bool(self._history)
            raise
        self._expected = self._step
        self._blobs = []
        self._history = []
        self._recheck_history = False
        self._state_bytes = info.state_bytes
        self._coalescer.written()
        if seal:
            self._sealed.extend(open_turn)
            self._turn_start = len(self.state.conversation)
            self._open = False
            self._reply = None
        return info


__all__ = ["Conversation", "now_timestamp"]
