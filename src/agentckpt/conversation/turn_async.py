"""One open conversation: its turns, streaming and tool calls (async source).

``turn.py`` is generated from ``turn_async.py`` by ``scripts/unasync.py``:
edit ``turn_async.py``.

A turn is one step of the run. Adding the user's message commits the step *open*
(durable before the model is called); streamed output and tool calls rewrite that open
step, coalesced; completing the turn commits it *sealed*, in one commit that carries
whatever was still unwritten. Each write of the open step bumps its ``write_version``, so
a second writer is refused with a typed conflict.

A call whose write is refused (a value the store cannot keep, another writer) leaves the
handle exactly as it was before the call; content that is only buffered (streamed text,
a tool call started) is checked when it is added, so it cannot poison a later write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import EllipsisType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentckpt._compat import off_loop_async
from agentckpt._core.blobs import is_ref
from agentckpt._core.codec import Limits, encode, encode_fast, encode_trusted
from agentckpt._core.policy import SnapshotPolicy
from agentckpt._core.writes import BlobRow, HistoryRow
from agentckpt.conversation import queries
from agentckpt.conversation.archive import choose_cut, segment_row
from agentckpt.conversation.checks import check_call, check_duration, check_message, check_usage
from agentckpt.conversation.coalesce import Coalescer
from agentckpt.conversation.fields import validate_at
from agentckpt.conversation.model import ArchiveInfo, ConversationState, Message, ToolCall
from agentckpt.errors import ConflictError, InvalidValueError, StaleHeadError, TurnError
from agentckpt.records import StepInfo
from agentckpt.redaction import Redaction, record_metadata, redact
from agentckpt.store.ride_out_async import ride_out_async

if TYPE_CHECKING:
    from agentckpt.conversation.conversations_async import AsyncConversations
    from agentckpt.conversation.recovery import Recovery


# A write that fails with one of these wrote nothing and never will as it stands (a value
# the store refuses, another writer): the call is undone. Other failures (UnavailableError,
# OutcomeUnknownError, ...) keep the change in memory, for flush() to retry.
_REFUSED = (InvalidValueError, ConflictError)
# An interval no conversation reaches: the step count alone never makes a snapshot.
_NEVER = 2**62
# An interval every step reaches: the step is a snapshot.
_NOW = 1
# A blob at least this large is compressed and hashed off the event loop: handing it to
# a thread and back costs the loop about 30 us, what zstd and sha256 take for some 5 KB.
_OFF_LOOP_BYTES = 16 * 1024


@dataclass(slots=True)
class _ArchiveMark:
    """What archiving old turns changed: the lists before the cut, the segment it added."""

    messages: list[Message]
    sealed: list[dict[str, Any]]
    info: ArchiveInfo | None
    counts: tuple[int, int]
    archived: int | None
    segment: HistoryRow


@dataclass(slots=True)
class _Mark:
    """What a call may change in the handle, taken before it, to undo a refused write."""

    step: int | None
    is_open: bool
    turn_start: int
    reply: Message | None
    reply_content: Any
    reply_calls: int | None
    dirty: bool
    messages: int
    sealed: int
    blobs: int
    usage: tuple[int | None, int | None, int | float | None]
    calls: list[tuple[ToolCall, ToolCall]]
    # Set when the call archives old turns (rare): the lists it cuts, before the cut.
    archive: _ArchiveMark | None = None


def now_timestamp() -> str:
    """The default message timestamp: UTC, ISO 8601, milliseconds, ``Z`` (as seed 000)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AsyncConversation:
    """A writable conversation: get one from ``AsyncConversations.start()`` or ``open()``.

    One writer per conversation: a newer handle for the same conversation (from the same
    :class:`AsyncConversations`) supersedes this one, and a writer in another process
    makes this one's next write fail with :class:`~agentckpt.errors.StaleHeadError`.

    Example::

        conv = await conversations.start(agent_id="weather", agent_config=cfg, tools=tools)
        await conv.add_user_message("What's the weather in Berlin?")   # durable now
        call = await conv.start_tool_call("get_weather", {"city": "Berlin"})
        await conv.finish_tool_call(call, {"temperature": 12}, duration_ms=340)
        await conv.stream("It is 12 degrees ")                         # coalesced
        await conv.stream("and cloudy.")
        await conv.complete_turn(input_tokens=1523, output_tokens=421)  # durable, sealed
    """

    def __init__(
        self,
        owner: AsyncConversations,
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
        sealed: list[dict[str, Any]] | None = None,
        epoch: int | None = None,
    ) -> None:
        self.conversations = owner
        self.store = owner.store
        self.conversation_id = conversation_id
        # How the outage log names this conversation: formatted once, not on every write.
        self._what = f"conversation {conversation_id}"
        self.agent_id = agent_id
        self.state = state
        self.recovery = recovery
        self._generation = generation
        self._step = step
        self._open = is_open
        self._expected: int | EllipsisType | None = step
        self._turn_start = turn_start
        # Completed turns never change: their JSON is built once, not on every write
        # (``sealed``: the JSON they were read from, when the caller has it).
        self._sealed = (
            sealed if sealed is not None else [m.to_json() for m in state.conversation[:turn_start]]
        )
        self._blobs: list[BlobRow] = []
        # What the redactors removed, by step: paths and kinds (agentckpt.redaction).
        self._redacted: dict[int, list[Redaction]] = {}
        self._history: list[HistoryRow] = []
        self._recheck_history = False
        self._reply: Message | None = None
        self._state_bytes = state_bytes
        self._coalescer = Coalescer(owner.options.flush_interval, clock=owner.clock)
        self._archived: list[Message] | None = None
        # Whether the open turn archived old turns: its seal is then a snapshot.
        self._archiving = False
        self._lost: ConflictError | None = None
        # The lease epoch this handle read: every write is fenced by it, so once a
        # recovery worker claims the conversation (a new epoch) this handle writes nothing.
        self._epoch = epoch
        # Whether the last sealed step stores exactly ``_sealed`` (then each commit tells
        # the store so, and it neither encodes nor compares them again): true for a
        # conversation this handle started, and once this handle has sealed a turn; a
        # recovered one may have repaired or upgraded messages still to be written.
        self._sealed_stored = recovery is None
        # The store's policy and the one :meth:`_open_policy` made of it.
        self._open_policies: tuple[SnapshotPolicy, SnapshotPolicy] | None = None

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

    async def add_user_message(
        self, content: Any, *, timestamp: str | None = None, extra: dict[str, Any] | None = None
    ) -> StepInfo:
        """Start a turn with the user's message; it is durable when this returns.

        If the store refuses the message (a value it cannot keep, another writer), the
        handle is as it was. If the commit fails otherwise, the turn stays open in memory;
        :meth:`flush` retries it.
        """
        if self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: turn {self._step} is still open; "
                "complete it before adding the next user message"
            )
        message = Message("user", content, timestamp=timestamp or now_timestamp(), extra=extra)
        check_message(message, f"/conversation/{len(self.state.conversation)}")
        mark = self._mark()
        try:
            self._archive_if_large(mark)
            self.state.conversation.append(message)
            self._turn_start = len(self.state.conversation) - 1
            self._step = (self._step or 0) + 1
            self._open = True
            self._reply = None
        except BaseException:
            self._restore(mark)
            raise
        return await self._commit(mark, seal=False)

    async def add_message(self, message: Message) -> bool:
        """Add a message (assistant, tool, system) to the open turn; written coalesced.

        Returns True if it caused a write. Its tool calls' results are offloaded as usual.
        """
        self._require_open()
        check_message(message, f"/conversation/{len(self.state.conversation)}")
        if message.role == "user":
            raise TurnError("a user message starts a turn: use add_user_message()")
        mark = self._mark(calls=message.tool_calls or ())
        try:
            await self._append(message, check=True)
        except BaseException:
            self._restore(mark)
            raise
        return await self._flush_if_due(mark)

    async def add_assistant_message(
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
        the turn is completed too: one durable write, which carries the message, anything
        of the turn not written yet and the seal, and returns its step."""
        message = Message(
            "assistant",
            content,
            timestamp=timestamp or now_timestamp(),
            tool_calls=None if tool_calls is None else list(tool_calls),
            extra=extra,
        )
        if not complete:
            await self.add_message(message)
            return None
        self._require_open()
        check_message(message, f"/conversation/{len(self.state.conversation)}")
        check_usage(input_tokens, output_tokens, cost_usd)
        mark = self._mark(calls=message.tool_calls or ())
        try:
            # Not checked here nor flushed: the sealing commit checks and writes it now.
            await self._append(message, check=False)
        except BaseException:
            self._restore(mark)
            raise
        return await self._seal(
            mark, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd
        )

    def begin_reply(
        self, *, timestamp: str | None = None, extra: dict[str, Any] | None = None
    ) -> Message:
        """Start the assistant message that :meth:`stream` and :meth:`start_tool_call`
        add to (they start one themselves if none is in progress)."""
        self._require_open()
        reply = Message("assistant", "", timestamp=timestamp or now_timestamp(), extra=extra)
        validate_at(
            reply.to_json(), f"/conversation/{len(self.state.conversation)}", limits=self._limits
        )
        self.state.conversation.append(reply)
        self._reply = reply
        self._coalescer.changed()
        return reply

    async def stream(self, text: str) -> bool:
        """Append streamed text to the reply being generated; True if it caused a write."""
        self._require_open()
        reply = self._reply
        if reply is not None and reply.content is not None and not isinstance(reply.content, str):
            raise TurnError("the reply's content is not text; cannot stream text into it")
        if type(text) is not str:
            raise TypeError(f"stream() takes a str, not {type(text).__name__}")
        index = len(self.state.conversation) - (reply is not None)
        validate_at(text, f"/conversation/{index}/content", limits=self._limits)
        mark = self._mark()
        try:
            reply = self._current_reply()
            reply.content = (reply.content or "") + text
            self._coalescer.changed()
        except BaseException:
            self._restore(mark)
            raise
        return await self._flush_if_due(mark)

    async def start_tool_call(
        self, tool_name: str, arguments: Any = None, *, extra: dict[str, Any] | None = None
    ) -> ToolCall:
        """Record that the reply calls a tool (no result yet: a crash now leaves it
        dangling, which recovery closes or re-runs)."""
        self._require_open()
        call = ToolCall(tool_name, arguments, extra=extra)
        reply = self._reply
        index = len(self.state.conversation) - (reply is not None)
        position = 0 if reply is None or reply.tool_calls is None else len(reply.tool_calls)
        check_call(call, f"/conversation/{index}/tool_calls/{position}")
        validate_at(
            call.to_json(), f"/conversation/{index}/tool_calls/{position}", limits=self._limits
        )
        mark = self._mark()
        try:
            reply = self._current_reply()
            if reply.tool_calls is None:
                reply.tool_calls = []
            reply.tool_calls.append(call)
            self._coalescer.changed()
        except BaseException:
            self._restore(mark)
            raise
        await self._flush_if_due(mark)
        return call

    async def finish_tool_call(
        self, call: ToolCall, result: Any, *, duration_ms: int | float | None = None
    ) -> StepInfo:
        """Record a tool's result and write the turn at once (a result is costly to redo).

        A result larger than ``blob_threshold`` goes to the blob store in the same
        transaction; the state keeps its reference. A result the store refuses leaves
        the call without it, as before.
        """
        self._require_open()
        path = self._call_path(call)
        if path is None:
            raise TurnError(
                f"conversation {self.conversation_id}: the tool call is not one of the open "
                "turn's; start_tool_call() in this turn returns the calls to finish"
            )
        if call.has_result:
            raise TurnError(
                f"conversation {self.conversation_id}: tool call {call.tool_name!r} already "
                "has its result; a result is recorded once"
            )
        check_duration(duration_ms, path.removesuffix("/result"))
        mark = self._mark(calls=[call])
        try:
            # Redacted before it can reach a blob: the offload below encodes it.
            result = self._redact(result, path)
            call.set_result(result, duration_ms=duration_ms)
            await self._offload(call, path)
            self._coalescer.changed()
        except BaseException:
            self._restore(mark)
            raise
        return await self._commit(mark, seal=False)

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

    async def complete_turn(
        self, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: int | float = 0
    ) -> StepInfo:
        """Seal the turn: one durable write, carrying anything of the turn not written
        yet; the turn is complete when this returns.

        Token counts and cost are added to the metadata. A tool call still without a
        result is refused (:class:`InvalidValueError` with its path): finish it first,
        even with an error result, so no model ever sees a call without its result.
        """
        self._require_open()
        check_usage(input_tokens, output_tokens, cost_usd)
        return await self._seal(
            self._mark(), input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd
        )

    async def flush(self) -> StepInfo | None:
        """Write the open turn now (also retries a write that failed); None if none is open."""
        if not self._open:
            return None
        return await self._commit(None, seal=False)

    async def flush_if_due(self) -> bool:
        """Write the open turn if it changed and ``flush_interval`` has passed; True if so.

        There is no background timer: call this from a long wait to bound what is at
        risk while no new tokens arrive.
        """
        return await self._flush_if_due(None)

    # -- reads and liveness ----------------------------------------------------------

    async def all_messages(self) -> list[Message]:
        """Every message: the archived ones (read once, then cached) and the hot ones."""
        if self._archived is None:
            self._archived = await self.conversations.history(self.conversation_id, self.state)
        return self._archived + self.state.conversation

    async def load_result(self, call: ToolCall) -> Any:
        """A tool call's result, fetching (and verifying) its blob if it has one."""
        return await self.conversations.load_result(self.conversation_id, call)

    async def heartbeat(self) -> datetime:
        """Tell orphan detection this conversation's writer is alive; the database time."""
        return await self.conversations.heartbeat(self.conversation_id)

    async def end(self, status: str = "completed") -> None:
        """Mark the conversation finished (no longer an orphan candidate)."""
        if self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: turn {self._step} is open; "
                "complete it before ending the conversation"
            )
        await self.store.set_status(self.conversation_id, status)

    # -- internals -----------------------------------------------------------------

    def _require_open(self) -> None:
        if not self._open:
            raise TurnError(
                f"conversation {self.conversation_id}: no turn is open; "
                "add_user_message() starts one"
            )

    @property
    def _limits(self) -> Limits:
        return self.store.limits

    def _current_reply(self) -> Message:
        return self._reply if self._reply is not None else self.begin_reply()

    async def _append(self, message: Message, *, check: bool) -> None:
        """Add a message to the open turn (its large results offloaded); ``check``
        validates it now, for a message that is only buffered, not written at once."""
        index = len(self.state.conversation)
        for position, call in enumerate(message.tool_calls or ()):
            await self._offload(call, f"/conversation/{index}/tool_calls/{position}/result")
        if check:
            path = f"/conversation/{index}"
            validate_at(message.to_json(), path, limits=self._limits)
        self.state.conversation.append(message)
        self._reply = None
        self._coalescer.changed()

    def _check_results(self) -> None:
        """Refuse to seal a turn with a tool call that has no result, naming its path."""
        for i in range(self._turn_start, len(self.state.conversation)):
            for j, call in enumerate(self.state.conversation[i].tool_calls or ()):
                if not call.has_result:
                    raise InvalidValueError(
                        f"/conversation/{i}/tool_calls/{j}",
                        f"tool call {call.tool_name!r} has no result; finish it first",
                    )

    def _redact(self, value: Any, path: str) -> Any:
        """``value`` through the conversation's redactors; what they removed is kept as
        records of the current step (written with its next write)."""
        redactors = self.conversations.redactors
        if not redactors:
            return value
        value, found = redact(value, redactors, path=path)
        if found and self._step is not None:
            known = self._redacted.setdefault(self._step, [])
            known.extend(r for r in found if r not in known)
        return value

    def _redact_message(self, message: dict[str, Any], path: str) -> dict[str, Any]:
        """The message with its content and tool calls (arguments, results) redacted;
        role, timestamps and ids are the library's own and stay as they are."""
        if not self.conversations.redactors:
            return message
        out = dict(message)
        for key in ("content", "tool_calls"):
            if key in out:
                out[key] = self._redact(out[key], f"{path}/{key}")
        return out

    def _call_path(self, call: ToolCall) -> str | None:
        """The JSON Pointer of ``call``'s result in the stored state; None when ``call``
        is not one of the open turn's."""
        for i in range(len(self.state.conversation) - 1, self._turn_start - 1, -1):
            for j, other in enumerate(self.state.conversation[i].tool_calls or ()):
                if other is call:
                    return f"/conversation/{i}/tool_calls/{j}/result"
        return None

    async def _offload(self, call: ToolCall, path: str) -> None:
        """Move a large (or reference-shaped) inline result to a blob of this commit;
        ``path`` is the result's JSON Pointer in the state, which a refusal names."""
        if not call.has_result or call.result_ref is not None:
            return
        value = call.result
        try:
            # Only measured here; a result that stays inline is validated with the rest
            # of the commit's new content, so validating it now would check it twice.
            fast = data = encode_fast(value)
            if data is None:
                try:
                    data = encode_trusted(value)  # big integers, deep nesting: the stdlib's
                except (TypeError, ValueError):
                    data = encode(value, limits=self.store.limits)  # raises, naming it
            # A result shaped like a blob reference is stored as a blob too, so every
            # reference found in a state is a real one.
            if len(data) <= self.conversations.options.blob_threshold and not is_ref(value):
                return
            # Leaving the state: validate it (orjson writes NaN as null, a tuple as an
            # array), from orjson's bytes when there are some (not encoded again). Its
            # encoding is the blob's raw bytes, bounded by Limits.max_bytes as a state is.
            data = encode(value, limits=self.store.limits, fast=fast)
        except InvalidValueError as exc:
            # The codec names a path inside the result; the caller needs it in the state.
            raise InvalidValueError(path + exc.path, exc.reason) from None
        if len(data) < _OFF_LOOP_BYTES:
            ref, row = self.store.prepare_blob(data)
        else:
            # zstd and sha256 release the GIL: on another thread they run beside the
            # event loop (about 0.6 ms of CPU for 64 KB) instead of on it.
            ref, row = await off_loop_async(self.store.prepare_blob, data)
        call.attach_blob(ref)
        self._blobs.append(row)

    def _archive_if_large(self, mark: _Mark) -> None:
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
        before = self.state.archive
        info = before or ArchiveInfo()
        segment = segment_row(info.segments, self._sealed[:cut])
        mark.archive = _ArchiveMark(
            messages=list(hot),
            sealed=list(self._sealed),
            info=before,
            counts=(info.messages, info.segments),
            archived=None if self._archived is None else len(self._archived),
            segment=segment,
        )
        self._history.append(segment)
        info.messages += cut
        info.segments += 1
        self.state.archive = info
        if self._archived is not None:
            self._archived.extend(hot[:cut])
        del hot[:cut]
        del self._sealed[:cut]
        self._turn_start -= cut
        self._archiving = True

    def _mark(self, *, calls: Sequence[ToolCall] = ()) -> _Mark:
        reply = self._reply
        calls_before = None if reply is None or reply.tool_calls is None else reply.tool_calls
        meta = self.state.metadata
        return _Mark(
            step=self._step,
            is_open=self._open,
            turn_start=self._turn_start,
            reply=reply,
            reply_content=None if reply is None else reply.content,
            reply_calls=None if calls_before is None else len(calls_before),
            dirty=self._coalescer.dirty,
            messages=len(self.state.conversation),
            sealed=len(self._sealed),
            blobs=len(self._blobs),
            usage=(meta.input_tokens, meta.output_tokens, meta.cost_estimate_usd),
            calls=[(call, call.copy()) for call in calls],
        )

    def _restore(self, mark: _Mark) -> None:
        """Undo what the calls since ``mark`` changed (their write was refused)."""
        conversation = self.state.conversation
        archive = mark.archive
        if archive is not None:
            conversation[:] = archive.messages
            self._sealed[:] = archive.sealed
            self.state.archive = archive.info
            if archive.info is not None:
                archive.info.messages, archive.info.segments = archive.counts
            if self._archived is not None and archive.archived is not None:
                del self._archived[archive.archived :]
            self._history = [row for row in self._history if row is not archive.segment]
            self._archiving = False
        del conversation[mark.messages :]
        del self._sealed[mark.sealed :]
        del self._blobs[mark.blobs :]
        self._step, self._open, self._turn_start = mark.step, mark.is_open, mark.turn_start
        self._reply = reply = mark.reply
        if reply is not None:
            reply.content = mark.reply_content
            if mark.reply_calls is None:
                reply.tool_calls = None
            elif reply.tool_calls is not None:
                del reply.tool_calls[mark.reply_calls :]
        for call, saved in mark.calls:
            call.restore(saved)
        self._restore_usage(mark)
        self._coalescer.restore(mark.dirty)

    def _restore_usage(self, mark: _Mark) -> None:
        meta = self.state.metadata
        meta.input_tokens, meta.output_tokens, meta.cost_estimate_usd = mark.usage

    async def _seal(
        self,
        mark: _Mark,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: int | float,
    ) -> StepInfo:
        """Complete the open turn in one commit; undo the calls since ``mark`` if refused."""
        try:
            self._check_results()
            self.state.metadata.add_usage(
                input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd
            )
        except BaseException:
            self._restore(mark)
            raise
        try:
            return await self._commit(mark, seal=True)
        except _REFUSED:
            raise  # _commit undid it all
        except BaseException:
            # Not sealed (or unknown): a retry with the same usage must not count it twice.
            self._restore_usage(mark)
            raise

    async def _flush_if_due(self, mark: _Mark | None) -> bool:
        if self._open and self._coalescer.due():
            await self._commit(mark, seal=False)
            return True
        return False

    async def _commit(self, mark: _Mark | None, *, seal: bool) -> StepInfo:
        """Write the open turn; if the store refuses it, undo the calls since ``mark``."""
        try:
            # An outage (no connection, a commit of unknown outcome) is ridden out under
            # the store's outage policy: a retry of _write is the same commit.
            return await ride_out_async(
                self.store.outage,
                lambda: self._write(seal=seal),
                what=self._what,
            )
        except _REFUSED:
            if mark is not None:
                self._restore(mark)
            raise

    def _open_policy(self) -> SnapshotPolicy:
        """The snapshot policy of a write that leaves the turn open: the store's, except
        that the step count never makes it a snapshot. The seal rewrites this version
        anyway; when the turn's step is due a snapshot, the seal writes it (the store
        keeps an open snapshot a snapshot), so the version that dies is a small delta,
        not a second copy of the whole state."""
        policy = self.store.policy
        cached = self._open_policies
        if cached is None or cached[0] is not policy:
            # Built once a store policy (dataclasses.replace costs about 2 us a write).
            cached = self._open_policies = (policy, replace(policy, interval=_NEVER))
        return cached[1]

    def _seal_policy(self) -> SnapshotPolicy | None:
        """The snapshot policy of a seal: the store's, except that a turn that archived
        old turns seals as a snapshot. Its delta would remove them one op each from the
        state of the last snapshot, which still holds them (up to twice the state now):
        every resume until the next snapshot would read that snapshot and replay the
        removals. A snapshot of the smaller state costs what the state holds and prunes
        the steps before it; archiving happens once the state has grown from about
        half ``archive_threshold`` to all of it again."""
        return replace(self.store.policy, interval=_NOW) if self._archiving else None

    async def _write(self, *, seal: bool) -> StepInfo:
        self.conversations._check_writer(self.conversation_id, self._generation)
        if self._lost is not None:
            raise StaleHeadError(
                f"conversation {self.conversation_id}: another writer moved it on "
                f"({self._lost}); nothing was written, open it again"
            )
        if self._recheck_history and self._history:
            # The last write's outcome was unknown: do not send a segment twice.
            stored = await self.store.backend.read(
                queries.HISTORY_SEQS,
                {"run_id": self.conversation_id, "from_seq": self._history[0].seq},
            )
            done = {row["seq"] for row in stored}
            self._history = [row for row in self._history if row.seq not in done]
        assert self._step is not None
        open_turn = [m.to_json() for m in self.state.conversation[self._turn_start :]]
        if self.conversations.redactors:
            open_turn = [
                self._redact_message(m, f"/conversation/{self._turn_start + k}")
                for k, m in enumerate(open_turn)
            ]
        document = self.state.to_json(conversation=self._sealed + open_turn)
        metadata = self.state.metadata.rollup() if seal else None
        if self._redacted.get(self._step):
            records = record_metadata(self._step, self._redacted[self._step])
            metadata = {**(metadata or {}), **records}
        try:
            info = await self.store.commit(
                self.conversation_id,
                document,
                step=self._step,
                keep_open=not seal,
                expected_head=self._expected,
                epoch=self._epoch,
                blobs=self._blobs,
                history=self._history,
                policy=self._seal_policy() if seal else self._open_policy(),
                metadata=metadata,
                # The sealed turns are this handle's JSON of them, never changed once
                # written: the base of this commit (the last sealed step) holds them.
                unchanged_prefix=("conversation", len(self._sealed))
                if self._sealed_stored
                else None,
            )
        except InvalidValueError:
            raise  # refused before anything was sent: the head this handle read still holds
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
            self._sealed_stored = True
            self._archiving = False
            self._turn_start = len(self.state.conversation)
            self._open = False
            self._reply = None
        return info


__all__ = ["AsyncConversation", "now_timestamp"]
