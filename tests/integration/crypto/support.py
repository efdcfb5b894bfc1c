"""Shared pieces of the encryption tests: keys, and a store filled with a known secret."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from agentckpt import Encryption, Store
from agentckpt.conversation import ConversationOptions, Conversations
from agentckpt.crypto import StaticKeys
from agentckpt.runs.effects import Effects

# A value no agentckpt code writes by itself: finding its bytes anywhere means plaintext
# leaked. Long enough that zstd keeps it literally in clear if it were not sealed.
SECRET = "sk-live-7f3a9c-THE-SECRET-THAT-MUST-NOT-LEAK"
KEK_1 = bytes(range(32))
KEK_2 = bytes(range(32, 64))
SMALL = ConversationOptions(archive_threshold=2000, archive_keep_turns=2)


def keys(*ids: str) -> StaticKeys:
    """A provider holding the named test KEKs (``kek-1``, ``kek-2``), the first current."""
    table = {"kek-1": KEK_1, "kek-2": KEK_2, "kek-wrong": bytes(32)}
    return StaticKeys({key_id: table[key_id] for key_id in ids})


def encryption(*ids: str, metadata: bool = False) -> Encryption:
    """Encryption with the named test KEKs."""
    return Encryption(keys=keys(*(ids or ("kek-1",))), metadata=metadata)


def key_text(*ids: str) -> str:
    """The env/file text form of the named test KEKs."""
    table = {"kek-1": KEK_1, "kek-2": KEK_2}
    return ",".join(f"{i}:{base64.b64encode(table[i]).decode()}" for i in ids)


@dataclass
class Filled:
    """What :func:`fill` wrote."""

    run_id: UUID
    conversation_id: UUID
    blob_ref: dict[str, Any]
    states: dict[UUID, Any]


def fill(store: Store, *, blob: bool = True) -> Filled:
    """Write the secret into every kind of value: config, metadata, steps (snapshot and
    delta), a blob, history segments (an archived conversation) and an effect result."""
    run = store.create_run(agent_id="agent", config={"api_key": SECRET}, metadata={"owner": SECRET})
    rid = run.run_id
    ref, row = store.prepare_blob((SECRET * 200).encode())
    store.commit(rid, {"messages": [SECRET], "doc": ref.to_json()}, blobs=[row] if blob else [])
    store.commit(rid, {"messages": [SECRET, SECRET + "-2"], "doc": ref.to_json()})
    Effects(store).record(rid, 2, "tool", {"result": SECRET})
    conversations = Conversations(store, options=SMALL)
    conv = conversations.start(agent_id="a", agent_config={"k": SECRET}, tools=[])
    for turn in range(20):
        conv.add_user_message(f"{SECRET} question {turn} " + "q" * 150)
        conv.add_assistant_message(f"{SECRET} answer {turn} " + "a" * 150)
    states = {rid: store.latest(rid).state}  # type: ignore[union-attr]
    return Filled(rid, conv.conversation_id, ref.to_json(), states)


def check_reads(store: Store, filled: Filled) -> None:
    """Everything :func:`fill` wrote reads back exactly."""
    rid = filled.run_id
    run = store.get_run(rid)
    assert run.config == {"api_key": SECRET}
    assert run.metadata == {"owner": SECRET}
    assert store.latest(rid).state == filled.states[rid]  # type: ignore[union-attr]
    assert store.state_at(rid, 1).state["messages"] == [SECRET]
    assert store.get_blob(rid, filled.blob_ref) == (SECRET * 200).encode()
    assert Effects(store).recorded(rid, 2, "tool") == {"result": SECRET}
    messages = Conversations(store).all_messages(filled.conversation_id)
    assert len(messages) == 40
    assert messages[0].content.startswith(SECRET)


def file_bytes(directory: Path) -> bytes:
    """Every byte of every file under ``directory`` (a SQLite file with its WAL, a blob
    directory)."""
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def leaks(data: bytes) -> bool:
    """Whether ``data`` holds the secret, raw or in the forms a dump or export uses."""
    raw = SECRET.encode()
    # base64 of the secret inside a longer value is one of three alignments.
    forms = [raw, raw.hex().encode(), *(base64.b64encode(raw[i : i + 30]) for i in range(3))]
    return any(form in data for form in forms)
