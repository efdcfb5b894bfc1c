"""What recovery checks and reports; no I/O here.

After a crash the agent must continue from the exact logical state. Three things can make
the stored state unsafe to hand to a model as it is, and each is reported, never hidden:

- **drift**: the runtime offers another model, LoRA adapters, temperature, max tokens or
  tool set than the checkpoint recorded (:func:`config_drift`, every difference listed);
- **a pending turn**: the process died after the user's message was durable but before
  the reply was complete (:class:`PendingTurn`); the turn is replayed or continued;
- **dangling tool calls**: a call with no result (:func:`find_dangling`); a model API
  rejects such a history, so each one is closed with an error result
  (:func:`interrupted_result`) or re-run by a caller-supplied function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from agentckpt.conversation.model import (
    AgentConfig,
    ConversationState,
    Message,
    ToolCall,
    tool_names,
)
from agentckpt.ops.recovery import pending_start

__all__ = [
    "DanglingCall",
    "Difference",
    "PendingTurn",
    "Recovery",
    "close_dangling",
    "config_drift",
    "find_dangling",
    "find_pending",
    "interrupted_result",
]

INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the runtime differs from the checkpoint.

    ``field`` is a dotted name (``agent_config.model``, ``tool_registry.send_email``);
    ``kind`` is ``changed``, ``missing`` (checkpoint has it, runtime lacks it) or
    ``added`` (runtime has it, checkpoint did not). Absent sides are None.
    """

    field: str
    kind: Literal["changed", "missing", "added"]
    stored: Any
    runtime: Any

    def __str__(self) -> str:
        if self.kind == "missing":
            return f"{self.field}: the checkpoint has {self.stored!r}, the runtime has none"
        if self.kind == "added":
            return f"{self.field}: the runtime adds {self.runtime!r}, the checkpoint had none"
        return f"{self.field}: the checkpoint has {self.stored!r}, the runtime {self.runtime!r}"


def _equal(a: Any, b: Any) -> bool:
    # Semantic equality (4096 == 4096.0 is no drift), but True is not the number 1 here.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _config_differences(stored: AgentConfig, runtime: AgentConfig) -> list[Difference]:
    old, new = stored.to_json(), runtime.to_json()
    out = []
    for key in list(old) + [k for k in new if k not in old]:
        name = f"agent_config.{key}"
        if key not in new:
            out.append(Difference(name, "missing", old[key], None))
        elif key not in old:
            out.append(Difference(name, "added", None, new[key]))
        elif not _equal(old[key], new[key]):
            out.append(Difference(name, "changed", old[key], new[key]))
    return out


def _registry_differences(stored: Sequence[Any], runtime: Sequence[Any]) -> list[Difference]:
    old = dict(zip(tool_names(stored), stored, strict=True))
    new = dict(zip(tool_names(runtime), runtime, strict=True))
    out = []
    for name, entry in old.items():
        if name not in new:
            out.append(Difference(f"tool_registry.{name}", "missing", entry, None))
        elif entry != new[name]:
            out.append(Difference(f"tool_registry.{name}", "changed", entry, new[name]))
    for name, entry in new.items():
        if name not in old:
            out.append(Difference(f"tool_registry.{name}", "added", None, entry))
    return out


def config_drift(
    state: ConversationState,
    agent_config: AgentConfig | Mapping[str, Any],
    tools: Iterable[Any],
) -> list[Difference]:
    """Every difference between the checkpoint's agent config and tool registry and the
    runtime's. Tools compare by name (entries are names or objects with a ``name``); an
    object entry that changed is a difference too. Config keys absent on one side count."""
    runtime = AgentConfig.coerce(agent_config)
    return _config_differences(state.agent_config, runtime) + _registry_differences(
        list(state.tool_registry or []), list(tools)
    )


@dataclass(frozen=True, slots=True)
class DanglingCall:
    """A tool call with no result, found at ``messages[message_index].tool_calls[call_index]``
    (indexes into :attr:`Recovery.messages`: all messages, archived ones first, unless the
    history was left unread). ``pending`` is True when it belongs to the turn that was cut
    off."""

    message_index: int
    call_index: int
    call: ToolCall
    pending: bool


def find_dangling(messages: Sequence[Message], *, pending_from: int | None) -> list[DanglingCall]:
    """Every tool call without a result; ``pending_from`` is where the open turn starts."""
    found = []
    for i, message in enumerate(messages):
        for j, call in enumerate(message.tool_calls or ()):
            if not call.has_result:
                pending = pending_from is not None and i >= pending_from
                found.append(DanglingCall(i, j, call, pending))
    return found


def interrupted_result(call: ToolCall) -> dict[str, Any]:
    """The error result that closes a dangling call: the model sees that the tool's
    outcome is unknown and must not assume it ran or did not run."""
    return {
        "error": INTERRUPTED,
        "message": (
            f"the call to {call.tool_name!r} was interrupted by a crash before its result "
            "was recorded; it may or may not have taken effect"
        ),
    }


def close_dangling(
    messages: Sequence[Message], results: Mapping[tuple[int, int], Any]
) -> list[Message]:
    """A copy of ``messages`` where each call at ``(message_index, call_index)`` in
    ``results`` has that result; untouched messages are shared, not copied."""
    out = list(messages)
    for i in sorted({i for i, _ in results}):
        fixed = messages[i].copy()
        for (mi, ci), value in results.items():
            if mi == i:
                assert fixed.tool_calls is not None
                fixed.tool_calls[ci].set_result(value)
        out[i] = fixed
    return out


@dataclass(frozen=True, slots=True)
class PendingTurn:
    """A turn cut off mid-way: its user message is durable, its reply is not complete.

    ``turn`` is its step number, ``start`` the index (in :attr:`Recovery.messages`) of
    ``user_message``, ``partial`` the reply messages flushed before the crash (streamed
    text, finished tool calls). Replay it (drop ``partial`` and ask the model again, as
    seed 000 does) or continue it (keep the finished tool calls).
    """

    turn: int
    start: int
    user_message: Message
    partial: list[Message]


def find_pending(
    messages: Sequence[Message], *, head_open: bool, head_step: int | None
) -> PendingTurn | None:
    """The open turn, if the head step is open: it starts at the last user message."""
    start = pending_start([m.role for m in messages], head_open=head_open, head_step=head_step)
    if start is None or head_step is None:
        return None
    return PendingTurn(head_step, start, messages[start], list(messages[start + 1 :]))


@dataclass(frozen=True, slots=True)
class Recovery:
    """A conversation read back after a crash, checked against the runtime.

    - ``messages``: every message exactly as stored (archived ones first), including a
      pending turn's user message and its flushed partial reply; read with
      ``include_history=False`` (as :meth:`~agentckpt.conversation.Conversations.open`
      does), only the hot ones, after ``unread_history`` archived messages left unread;
    - ``model_messages``: what to hand a model: the same, with every dangling tool call
      closed (or re-run, see ``dangling``); nothing without a result;
    - ``state``: the hot state as stored, upgraded to the current format version
      (``state_bytes`` long as stored; ``step`` and its ``write_version``);
    - ``differences``: the drift that was accepted (empty unless ``accept_drift=True``);
    - ``upgraded_from``: the stored state's format version when it was older, else None;
    - ``lease_epoch``: the conversation's lease epoch when read: a handle opened from it
      writes only while the epoch is still that one (a recovery worker's claim bumps it);
    - ``unread_history``: how many archived messages come before ``messages`` and were
      not read (0 unless ``include_history=False``); ``history()`` reads them.
    """

    conversation_id: UUID
    agent_id: str
    step: int | None
    write_version: int
    state_bytes: int
    state: ConversationState
    messages: list[Message]
    model_messages: list[Message]
    pending: PendingTurn | None
    dangling: list[DanglingCall] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    upgraded_from: int | None = None
    lease_epoch: int = 0
    unread_history: int = 0

    @property
    def agent_config(self) -> AgentConfig:
        """The agent config the checkpoint recorded."""
        return self.state.agent_config

    @property
    def tool_registry(self) -> list[Any]:
        """The tool registry the checkpoint recorded."""
        return list(self.state.tool_registry or [])

    def replay_messages(self) -> list[Message]:
        """``model_messages`` without the pending turn's partial reply: the history to
        regenerate the cut-off turn from (its user message is the last message)."""
        if self.pending is None:
            return list(self.model_messages)
        return list(self.model_messages[: self.pending.start + 1])
