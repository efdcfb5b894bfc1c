"""A run's messages read the same way whatever stored them; no I/O.

:func:`transcript` turns a state of any kind (:mod:`agentckpt.ops.kinds`) into
:class:`Entry` values: who spoke (``role``), what was said (``content``), the tool calls an
entry made (:class:`ToolUse`, with their results when the format keeps them inline) and
which call an entry answers (``answers``). It reads

- the conversation format (``tool_calls`` of ``tool_name``/``arguments``/``result``),
  OpenAI chat messages (``tool_calls`` of ``function``, ``role: tool`` answers) and
  Anthropic content blocks (``tool_use``, ``tool_result``);
- LangChain messages in a LangGraph thread (``human``, ``ai`` with ``tool_calls``,
  ``tool``, ``system``), decoded from their ``$serde`` wrappers;
- OpenAI Agents session items: messages, ``function_call``, ``function_call_output``,
  ``reasoning`` and any other item by its ``type``.

A call is *dangling* when nothing answers it: no inline result, no later entry with its
call id (:meth:`Transcript.dangling`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentckpt.ops.kinds import CONVERSATION, LANGGRAPH, SESSION, kind_of, messages_of
from agentckpt.ops.serde import Decoder, Undecoded

__all__ = ["Entry", "ToolUse", "Transcript", "chat_messages", "stored_messages", "transcript"]

_LANGCHAIN_ROLES = {
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "system": "system",
    "function": "tool",
    "developer": "system",
}
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text", "summary_text", "reasoning_text"})


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call: its name, arguments (parsed when stored as JSON text), call id, and
    its result if the format keeps it inline (``has_result``)."""

    name: str
    arguments: Any
    call_id: str | None = None
    result: Any = None
    has_result: bool = False
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Entry:
    """One message or item. ``content`` is text, JSON (content blocks) or None;
    ``answers`` is the call id a tool result answers; ``fields`` are short scalar
    fields shown on the entry's line, ``extra`` the rest of what was stored."""

    index: int
    role: str
    content: Any = None
    calls: tuple[ToolUse, ...] = ()
    answers: str | None = None
    name: str | None = None
    label: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    undecoded: Undecoded | None = None

    @property
    def heading(self) -> str:
        """What the entry is, for people: its label, else its role."""
        return self.label or self.role


@dataclass(frozen=True, slots=True)
class Transcript:
    """The entries of one state, and which layout they were read from."""

    kind: str
    entries: list[Entry]

    def answered(self) -> set[str]:
        """Call ids that some entry answers."""
        return {e.answers for e in self.entries if e.answers is not None}

    def dangling(self) -> list[tuple[Entry, int, ToolUse]]:
        """Every call nothing answers: ``(entry, index of the call in it, call)``."""
        answered = self.answered()
        return [
            (entry, i, call)
            for entry in self.entries
            for i, call in enumerate(entry.calls)
            if not call.has_result and (call.call_id is None or call.call_id not in answered)
        ]


def stored_messages(run_kind: str, state: Any) -> list[Any] | None:
    """The state's message list exactly as stored (LangGraph's still wrapped), or None."""
    kind = kind_of(run_kind, state)
    if kind == LANGGRAPH:
        messages = state["values"].get("messages")
        return messages if isinstance(messages, list) else None
    if kind == SESSION:
        items: list[Any] = state["items"]
        return items
    if kind == CONVERSATION:
        return messages_of(state)
    return None


def transcript(
    run_kind: str, state: Any, decoder: Decoder | None = None, *, start: int = 0
) -> Transcript | None:
    """The entries of ``state`` from index ``start`` on (numbered from the first), or
    None when it has no message list (a long run's state: show it as a tree)."""
    kind = kind_of(run_kind, state)
    messages = stored_messages(run_kind, state)
    if messages is None:
        return None
    picked = list(enumerate(messages))[start:]
    if kind == LANGGRAPH:
        codec = decoder or Decoder()
        return Transcript(kind, [_langchain(i, codec.value(m)) for i, m in picked])
    if kind == SESSION:
        return Transcript(kind, [_item(i, item) for i, item in picked])
    return Transcript(kind, [_message(i, m) for i, m in picked])


# -- shared pieces -------------------------------------------------------------------


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _split(doc: dict[str, Any], shown: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields not already shown: short scalars (not None) and nested values."""
    rest = {k: v for k, v in doc.items() if k not in shown}
    fields = {k: v for k, v in rest.items() if _scalar(v) and v is not None}
    extra = {k: v for k, v in rest.items() if not _scalar(v) and v not in ({}, [])}
    return fields, extra


def _arguments(value: Any) -> Any:
    """Arguments stored as JSON text (OpenAI's) are parsed, so they show as JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(content: Any) -> Any:
    """Content blocks that are all text, joined; anything else as it is."""
    if isinstance(content, list) and content:
        texts = [
            b.get("text")
            for b in content
            if isinstance(b, dict)
            and b.get("type") in _TEXT_BLOCKS
            and isinstance(b.get("text"), str)
        ]
        if len(texts) == len(content):
            return "\n\n".join(t for t in texts if t is not None)
    return content


# -- the conversation format, OpenAI chat messages, Anthropic blocks -----------------


def _call(doc: Any) -> ToolUse:
    if not isinstance(doc, dict):
        return ToolUse(name="tool", arguments=doc)
    function: dict[str, Any] = doc["function"] if isinstance(doc.get("function"), dict) else {}
    name = doc.get("tool_name") or doc.get("name") or function.get("name") or "tool"
    if "arguments" in doc:
        arguments = doc["arguments"]
    elif "input" in doc:
        arguments = doc["input"]
    elif "args" in doc:
        arguments = doc["args"]
    else:
        arguments = function.get("arguments")
    shown = ("tool_name", "name", "function", "arguments", "input", "args", "result", "id", "type")
    fields, extra = _split(doc, shown)
    call_id = doc.get("id") if isinstance(doc.get("id"), str) else None
    return ToolUse(
        name=str(name),
        arguments=_arguments(arguments),
        call_id=call_id,
        result=doc.get("result"),
        has_result="result" in doc,
        fields=fields | ({"extra": extra} if extra else {}),
    )


def _message(index: int, doc: Any) -> Entry:
    if not isinstance(doc, dict):
        return Entry(index, "item", content=doc)
    role = str(doc.get("role", "message"))
    content = doc.get("content")
    stored_calls = doc.get("tool_calls")
    calls = [_call(c) for c in stored_calls] if isinstance(stored_calls, list) else []
    answers = doc.get("tool_call_id") if isinstance(doc.get("tool_call_id"), str) else None
    if isinstance(content, list):
        kept = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.append(_call(block))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                answers = (
                    block.get("tool_use_id")
                    if isinstance(block.get("tool_use_id"), str)
                    else answers
                )
                kept.append(block)
            else:
                kept.append(block)
        content = _text(kept) if kept else None
    fields, extra = _split(doc, ("role", "content", "tool_calls", "name", "tool_call_id"))
    return Entry(
        index,
        role,
        content=content,
        calls=tuple(calls),
        answers=answers,
        name=doc.get("name") if isinstance(doc.get("name"), str) else None,
        label="tool result" if role == "tool" else None,
        fields=fields,
        extra=extra,
    )


# -- LangChain messages (LangGraph) --------------------------------------------------


def _langchain(index: int, value: Any) -> Entry:
    if isinstance(value, Undecoded):
        return Entry(index, "undecoded", undecoded=value, label=f"undecoded {value.type} value")
    if not isinstance(value, dict) or "content" not in value or "type" not in value:
        return _message(index, value)
    kind = str(value["type"])
    role = _LANGCHAIN_ROLES.get(kind, str(value.get("role") or kind))
    calls = tuple(
        ToolUse(
            name=str(c.get("name") or "tool"),
            arguments=c.get("args"),
            call_id=c.get("id") if isinstance(c.get("id"), str) else None,
        )
        for c in value.get("tool_calls") or ()
        if isinstance(c, dict)
    )
    shown = ("type", "content", "tool_calls", "tool_call_id", "name", "role")
    fields, extra = _split(value, shown)
    answers = value.get("tool_call_id") if isinstance(value.get("tool_call_id"), str) else None
    return Entry(
        index,
        role,
        content=_text(value["content"]) if value["content"] not in ("", []) else None,
        calls=calls,
        answers=answers,
        name=value.get("name") if isinstance(value.get("name"), str) else None,
        label="tool result" if role == "tool" else None,
        fields=fields,
        extra=extra,
    )


# -- OpenAI Agents session items -----------------------------------------------------


def _item(index: int, item: Any) -> Entry:
    if not isinstance(item, dict):
        return Entry(index, "item", content=item)
    kind = item.get("type")
    if kind == "function_call":
        fields, extra = _split(item, ("type", "name", "arguments", "call_id"))
        call = ToolUse(
            name=str(item.get("name") or "function"),
            arguments=_arguments(item.get("arguments")),
            call_id=item.get("call_id") if isinstance(item.get("call_id"), str) else None,
        )
        return Entry(
            index, "assistant", calls=(call,), label="function call", fields=fields, extra=extra
        )
    if kind == "function_call_output":
        fields, extra = _split(item, ("type", "output", "call_id"))
        return Entry(
            index,
            "tool",
            content=_text(_arguments(item.get("output"))),
            answers=item.get("call_id") if isinstance(item.get("call_id"), str) else None,
            label="function output",
            fields=fields,
            extra=extra,
        )
    if kind == "reasoning":
        parts = [_text(item.get("summary")), _text(item.get("content"))]
        texts = [p for p in parts if p not in (None, [], "")]
        fields, extra = _split(item, ("type", "summary", "content"))
        content: Any = None
        if texts:
            all_text = all(isinstance(t, str) for t in texts)
            content = "\n\n".join(texts) if all_text else texts
        return Entry(
            index, "reasoning", content=content, label="reasoning", fields=fields, extra=extra
        )
    if "role" in item and (kind in (None, "message")):
        fields, extra = _split(item, ("type", "role", "content"))
        return Entry(
            index, str(item["role"]), content=_text(item.get("content")), fields=fields, extra=extra
        )
    # Any other item (web search, file search, computer call, ...) under its own type.
    fields, extra = _split(item, ("type",))
    return Entry(
        index, "item", label=str(kind or "item").replace("_", " "), fields=fields, extra=extra
    )


# -- the chat-message format evaluation and fine-tuning tools read --------------------

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _chat_text(value: Any) -> Any:
    """Content as chat content: text stays text, blocks stay blocks, anything else JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) for b in value):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def chat_messages(entries: Sequence[Entry]) -> tuple[list[dict[str, Any]], int]:
    """The entries as OpenAI-style chat messages, and how many entries had no place there.

    ``role``/``content`` per message; an assistant's calls as ``tool_calls`` (``id``,
    ``type: function``, ``function.name``, ``function.arguments`` as JSON text); each
    result as a ``role: tool`` message with its ``tool_call_id`` (a result kept inline
    follows its assistant message). A call without an id gets ``call_<entry>_<n>``.
    Reasoning and other non-chat items are left out and counted. Values are copied as
    stored: what the store holds redacted stays redacted.
    """
    out: list[dict[str, Any]] = []
    skipped = 0
    for entry in entries:
        role = "assistant" if entry.role == "ai" else entry.role
        if role not in _CHAT_ROLES:
            skipped += 1
            continue
        message: dict[str, Any] = {"role": role, "content": _chat_text(entry.content)}
        if entry.name is not None and role != "tool":
            message["name"] = entry.name
        if role == "tool":
            message["tool_call_id"] = entry.answers
        calls = []
        results = []
        for n, call in enumerate(entry.calls):
            call_id = call.call_id or f"call_{entry.index}_{n}"
            arguments = call.arguments
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments, ensure_ascii=False, sort_keys=True),
                    },
                }
            )
            if call.has_result:
                results.append(
                    {"role": "tool", "tool_call_id": call_id, "content": _chat_text(call.result)}
                )
        if calls:
            message["tool_calls"] = calls
        # Chat messages of one assistant turn carrying several calls; merge consecutive
        # calls of an Agents session (one item per call) into the assistant before them.
        previous = out[-1] if out else None
        if (
            entry.label == "function call"
            and previous is not None
            and previous["role"] == "assistant"
            and previous.get("content") is None
        ):
            previous.setdefault("tool_calls", []).extend(calls)
        else:
            out.append(message)
        out.extend(results)
    return out, skipped
