"""How each kind of run looks as stored JSON; no I/O, no framework imports.

agentckpt stores four kinds of runs, told apart by the run's ``kind`` and its state:

- a **conversation** (kind ``conversation``): ``{"version": 2, "conversation": [...],
  "agent_config": ..., "tool_registry": ..., "metadata": ...}``; a message has ``role``,
  ``content`` and, for an assistant, ``tool_calls`` of ``tool_name``, ``arguments`` and,
  once it ran, ``result`` (a large result is a blob reference);
- a **LangGraph thread** (kind ``langgraph``, one run per thread and checkpoint
  namespace): ``{"id": checkpoint id, "checkpoint": {...}, "values": {channel: value}}``,
  where a value, or an item of a list value, that is not exact JSON is
  ``{"$serde": [type, base64 or blob reference]}`` (LangGraph's serializer, msgpack for
  LangChain messages) and a long string is ``{"$text": blob reference}``; the thread and
  namespace are the run's metadata ``thread_id`` and ``namespace``; pending writes
  (``step_writes``) are serialized the same way and stored ``none`` or ``zstd``;
- an **OpenAI Agents session** (kind ``session``): ``{"items": [...]}``, the Responses
  API items (messages, ``function_call``, ``function_call_output``, ``reasoning``, ...);
  the session id is the run's metadata ``session_id``;
- a **long run** (kind ``run``, or anything else): any JSON document.

The integrations write these layouts and import the facts they share from here (the
wrapper keys, the write codecs), so the writer and the readers (the inspector, the CLI)
agree by construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import zstandard

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt.errors import CorruptDataError

__all__ = [
    "CONVERSATION",
    "LANGGRAPH",
    "RUN",
    "SERDE_KEY",
    "SESSION",
    "TEXT_KEY",
    "USAGE_KEYS",
    "is_wrapper",
    "kind_of",
    "messages_of",
    "pack_payload",
    "title_of",
    "unpack_payload",
    "wrapper_refs",
]

CONVERSATION: Final = "conversation"
LANGGRAPH: Final = "langgraph"
SESSION: Final = "session"
RUN: Final = "run"

# -- LangGraph -----------------------------------------------------------------------

SERDE_KEY: Final = "$serde"
TEXT_KEY: Final = "$text"
_WRAPPERS = frozenset({SERDE_KEY, TEXT_KEY})

# Pending writes are usually a few dozen bytes; zstd only pays from about this size.
_MIN_COMPRESS = 128

# Run metadata: the usage totals a conversation rolls up (tokens and the cost estimate).
USAGE_KEYS: Final = ("input_tokens", "output_tokens", "cost_estimate_usd")


def is_wrapper(value: Any) -> bool:
    """True for ``{"$serde": ...}`` or ``{"$text": ...}``: a value LangGraph's serializer
    or the blob table holds (a plain value of that shape is itself wrapped on write)."""
    return type(value) is dict and len(value) == 1 and next(iter(value)) in _WRAPPERS


def wrapper_refs(value: Any) -> Iterator[BlobRef]:
    """The blob a wrapper refers to, if it refers to one."""
    if not is_wrapper(value):
        return
    if TEXT_KEY in value:
        yield BlobRef.from_json(value[TEXT_KEY])
        return
    wrapped = value[SERDE_KEY]
    if type(wrapped) is list and len(wrapped) == 2 and is_ref(wrapped[1]):
        yield BlobRef.from_json(wrapped[1])


def pack_payload(data: bytes) -> tuple[str, bytes]:
    """``(codec, stored bytes)`` of a pending write: ``zstd`` when that is smaller."""
    if len(data) >= _MIN_COMPRESS:
        packed = zstandard.compress(data, 3)
        if len(packed) < len(data):
            return "zstd", packed
    return "none", data


def unpack_payload(codec: str, stored: bytes, *, where: str) -> bytes:
    """Inverse of :func:`pack_payload`; ``where`` names the row if it fails."""
    if codec == "none":
        return bytes(stored)
    if codec == "zstd":
        try:
            return zstandard.decompress(stored)
        except zstandard.ZstdError as exc:
            raise CorruptDataError(f"{where}: zstd payload does not decompress: {exc}") from exc
    raise CorruptDataError(f"{where}: unknown payload codec {codec!r}")


# -- telling kinds apart -------------------------------------------------------------


def kind_of(run_kind: str, state: Any) -> str:
    """Which layout a run's state has: one of the four kinds above.

    The run's ``kind`` decides when it names a layout and the state has it; a run of
    another kind whose state has a conversation's message list reads as a conversation
    (the inspector has always shown ``state["conversation"]``/``["messages"]`` so).
    """
    doc = state if isinstance(state, dict) else {}
    if run_kind == LANGGRAPH and isinstance(doc.get("values"), dict):
        return LANGGRAPH
    if run_kind == SESSION and isinstance(doc.get("items"), list):
        return SESSION
    if messages_of(doc) is not None:
        return CONVERSATION
    return RUN


def messages_of(state: Any) -> list[Any] | None:
    """A conversation-like state's message list (``conversation`` or ``messages``)."""
    if not isinstance(state, dict):
        return None
    for key in ("conversation", "messages"):
        value = state.get(key)
        if isinstance(value, list):
            return value
    return None


def title_of(run_kind: str, metadata: Mapping[str, Any]) -> str | None:
    """What people call the run: a LangGraph thread id, an Agents SDK session id."""
    key = {LANGGRAPH: "thread_id", SESSION: "session_id"}.get(run_kind)
    value = metadata.get(key) if key else None
    return value if isinstance(value, str) and value else None
