"""``agentckpt export --format transcript``: runs' messages as chat JSON Lines.

One line per run that holds messages (conversations, LangGraph threads, Agents SDK
sessions; a free-form run is skipped), in the format evaluation and fine-tuning tools
read::

    {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", ...}],
     "run_id": "...", "agent_id": "...", "kind": "conversation", "step": 12,
     "agent_config": {...}, "skipped_entries": 0}

``agent_config`` is the run's stored config (model, adapters, tool registry). Values
are written as stored: redacted values stay redacted, a blob reference stays a
reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO
from uuid import UUID

from agentckpt.ops.transcripts import chat_messages, transcript
from agentckpt.store.store import Store

__all__ = ["TranscriptSummary", "export_transcripts", "transcript_line"]


@dataclass(frozen=True, slots=True)
class TranscriptSummary:
    """What an export wrote: runs written, runs without messages skipped."""

    written: int
    skipped: int


def transcript_line(store: Store, run_id: UUID) -> dict[str, Any] | None:
    """The chat line of one run at its head, or None when the run holds no messages."""
    run = store.get_run(run_id)
    checkpoint = store.latest(run.run_id)
    if checkpoint is None:
        return None
    read = transcript(run.kind, checkpoint.state)
    if read is None:
        return None
    messages, skipped = chat_messages(read.entries)
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
    on_run: Callable[[UUID, bool], None] | None = None,
) -> TranscriptSummary:
    """Write one chat line per run with messages; ``on_run(run_id, written)`` after each."""
    written = skipped = 0
    for run_id in run_ids:
        line = transcript_line(store, run_id)
        if line is None:
            skipped += 1
        else:
            out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            written += 1
        if on_run is not None:
            on_run(run_id, line is not None)
    return TranscriptSummary(written, skipped)
