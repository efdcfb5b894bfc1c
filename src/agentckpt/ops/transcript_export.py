"""``agentckpt export --format transcript``: runs' messages as chat JSON Lines.

One line per run that holds messages (conversations, LangGraph threads, Agents SDK
sessions; a free-form run is skipped), in the format evaluation and fine-tuning tools
read::

    {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", ...}],
     "run_id": "...", "agent_id": "...", "kind": "conversation", "step": 12,
     "agent_config": {...}, "skipped_entries": 0}

``agent_config`` is the run's stored config (model, adapters, tool registry). A
conversation's turns moved to the history table (archived) come first, so a line holds
the whole conversation. Values are written as stored (redacted values stay redacted),
except that a tool result offloaded to a blob is written as its value, fetched and
verified, unless ``blobs="ref"`` keeps the reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, TextIO
from uuid import UUID

from agentckpt._core.blobs import is_ref
from agentckpt._core.codec import decode
from agentckpt._core.segments import stitch
from agentckpt.crypto.sealing import HISTORY
from agentckpt.errors import CorruptDataError
from agentckpt.ops import queries
from agentckpt.ops.kinds import CONVERSATION, kind_of
from agentckpt.ops.transcripts import Entry, chat_messages, transcript
from agentckpt.store.store import Store

__all__ = ["BLOB_MODES", "TranscriptSummary", "export_transcripts", "transcript_line"]

BLOB_MODES = ("inline", "ref")
"""How a tool result stored as a blob is written: its value (inline) or its reference."""


@dataclass(frozen=True, slots=True)
class TranscriptSummary:
    """What an export wrote: runs written, runs without messages skipped."""

    written: int
    skipped: int


def transcript_line(store: Store, run_id: UUID, *, blobs: str = "inline") -> dict[str, Any] | None:
    """The chat line of one run at its head (archived turns included), or None when the
    run holds no messages. ``blobs``: one of :data:`BLOB_MODES`."""
    if blobs not in BLOB_MODES:
        raise ValueError(f"blobs must be one of {', '.join(BLOB_MODES)}, got {blobs!r}")
    run = store.get_run(run_id)
    checkpoint = store.latest(run.run_id)
    if checkpoint is None:
        return None
    state = checkpoint.state
    if kind_of(run.kind, state) == CONVERSATION:
        state = _with_archive(store, run.run_id, state)
    read = transcript(run.kind, state)
    if read is None:
        return None
    entries = read.entries
    if blobs == "inline":
        entries = [_inlined(store, run.run_id, entry) for entry in entries]
    messages, skipped = chat_messages(entries)
    return {
        "messages": messages,
        "run_id": str(run.run_id),
        "agent_id": run.agent_id,
        "kind": read.kind,
        "step": checkpoint.step,
        "agent_config": run.config,
        "skipped_entries": skipped,
    }


def export_transcripts(
    store: Store,
    run_ids: Iterable[UUID],
    out: TextIO,
    *,
    blobs: str = "inline",
    on_run: Callable[[UUID, bool], None] | None = None,
) -> TranscriptSummary:
    """Write one chat line per run with messages; ``on_run(run_id, written)`` after each.
    ``blobs``: one of :data:`BLOB_MODES`."""
    written = skipped = 0
    for run_id in run_ids:
        line = transcript_line(store, run_id, blobs=blobs)
        if line is None:
            skipped += 1
        else:
            out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            written += 1
        if on_run is not None:
            on_run(run_id, line is not None)
    return TranscriptSummary(written, skipped)


def _with_archive(store: Store, run_id: UUID, state: Any) -> Any:
    """A conversation state whose message list starts with its archived messages."""
    archive = state.get("archive")
    hot = state.get("conversation")
    if not isinstance(archive, dict) or not isinstance(hot, list):
        return state
    segments, messages = archive.get("segments"), archive.get("messages")
    if type(segments) is not int or type(messages) is not int or min(segments, messages) < 0:
        raise CorruptDataError(
            f"conversation {run_id}: /archive must hold segments and messages as "
            f"integers >= 0, got {archive!r:.80}"
        )
    if segments == 0:
        return state
    rows = store.open_rows(
        HISTORY, store.backend.read(queries.EXPORT_HISTORY, {"run_id": run_id}), run_id=run_id
    )
    return {**state, "conversation": stitch(run_id, segments, messages, rows) + hot}


def _inlined(store: Store, run_id: UUID, entry: Entry) -> Entry:
    """``entry`` with what it stored as blobs replaced by their values (each blob's
    bytes are checked against their sha256 when fetched): a tool call's result (the
    conversation format keeps it as JSON) and a message's whole content (text)."""
    calls = entry.calls
    if any(call.has_result and is_ref(call.result) for call in calls):
        calls = tuple(
            replace(call, result=_result(store, run_id, call.result))
            if call.has_result and is_ref(call.result)
            else call
            for call in calls
        )
    content = entry.content
    if is_ref(content):
        content = _text(store.get_blob(run_id, content), content)
    if calls is entry.calls and content is entry.content:
        return entry
    return replace(entry, calls=calls, content=content)


def _result(store: Store, run_id: UUID, ref: dict[str, Any]) -> Any:
    data = store.get_blob(run_id, ref)
    try:
        return decode(data)
    except CorruptDataError:
        # A blob the application stored itself (Store.put_blob) need not be JSON.
        return _text(data, ref)


def _text(data: bytes, ref: dict[str, Any]) -> Any:
    """The blob's bytes as text, or its reference when they are not UTF-8 (binary
    content has no place in a chat message)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ref
