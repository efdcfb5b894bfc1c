"""What one commit writes, and what the database answers: plain values, no I/O.

The store builds a :class:`StepWrite` from a commit plan before any I/O; a backend sends
it and answers :class:`Committed` or :class:`Refused`. Blob and history rows ride along,
so a step and everything it refers to become durable in one transaction.

A step's :class:`Payload` is packed (compressed when that pays) where it is first read,
which is the backend's send: the SQLite backend sends from its worker thread, so zstd,
which releases the GIL, runs there beside the event loop instead of on it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from agentckpt._core.compression import pack, pack_many

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class BlobRow:
    """A content-addressed value written in the same transaction as a step."""

    digest: str
    codec: str
    size: int
    data: bytes


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """An archived part of a run's state, written in the same transaction as a step."""

    seq: int
    item_count: int
    codec: str
    payload: bytes
    raw_bytes: int


class Payload:
    """A step's payload as stored: its codec and bytes, given (:meth:`packed`) or packed
    from the document's encoding (:meth:`of`) at most once, when first asked for.

    The bytes and codec are those :func:`~agentckpt._core.compression.pack` gives
    either way, so readers see no difference. The first read packs: the thread that
    sends the write, after the writer's thread has handed it over, so the two never
    pack at once (and packing twice would give the same bytes).
    """

    __slots__ = ("_raw", "_stored")

    def __init__(self, raw: bytes | None, stored: tuple[str, bytes] | None) -> None:
        self._raw = raw
        self._stored = stored

    @classmethod
    def of(cls, raw: bytes) -> Payload:
        """The payload of the document encoded as ``raw``, packed when first read."""
        return cls(raw, None)

    @classmethod
    def packed(cls, codec: str, data: bytes) -> Payload:
        """A payload packed (or sealed) already."""
        return cls(None, (codec, data))

    def pack(self) -> tuple[str, bytes]:
        """``(codec, data)``, packing the document now if it is not yet."""
        stored = self._stored
        if stored is None:
            raw = self._raw
            if raw is None:
                # Packed by another thread since the check above (it sets _stored before
                # it drops _raw); not a path the store takes, but harmless if one does.
                stored = self._stored
                assert stored is not None
                return stored
            stored = self._stored = pack(raw)
            self._raw = None
        return stored

    @staticmethod
    def pack_all(payloads: Sequence[Payload]) -> None:
        """Pack every payload not packed yet, in one compression call (see
        :func:`~agentckpt._core.compression.pack_many`); the same bytes as :meth:`pack`."""
        todo = [p for p in payloads if p._stored is None and p._raw is not None]
        if not todo:
            return
        raws = [p._raw for p in todo]
        for p, stored in zip(todo, pack_many([r for r in raws if r is not None]), strict=True):
            p._stored = stored
            p._raw = None

    @property
    def codec(self) -> str:
        """The codec tag stored beside the bytes."""
        return self.pack()[0]

    @property
    def data(self) -> bytes:
        """The bytes stored."""
        return self.pack()[1]

    def is_packed(self) -> bool:
        """Whether the bytes are there already (given, or packed by an earlier read)."""
        return self._stored is not None

    def size(self) -> int:
        """The stored bytes' length once packed, the document's until then (at most a
        little more: what a batch's byte limit counts without packing on the caller's
        thread)."""
        stored = self._stored
        if stored is not None:
            return len(stored[1])
        assert self._raw is not None
        return len(self._raw)

    def __repr__(self) -> str:
        if self._stored is None:
            return f"Payload(unpacked, {self.size()} bytes)"
        return f"Payload({self._stored[0]!r}, {len(self._stored[1])} bytes)"


class StepWrite(NamedTuple):
    """Everything one commit writes, decided by the store before any I/O.

    The guard fields (``expected_step``, ``expected_version``, ``epoch``) make the write
    conditional: the backend writes nothing unless the run's head is still the one the
    writer read and, when fenced, its lease epoch is current. ``token`` is stored with
    the step: when the guard refuses, the step found stored with the same content is this
    write's own (same token, a retry) or another writer's (another token). ``stored``
    is the step's payload, packed by the backend when it sends it (see :class:`Payload`).

    A named tuple, not a frozen dataclass: one is built per commit, and a frozen
    dataclass of these 23 fields takes about 3 us to build (one ``object.__setattr__`` a
    field), a tuple under 1 us; it is as immutable (``_replace`` gives a changed copy).
    """

    run_id: UUID
    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    stored: Payload
    state_version: int
    write_version: int
    raw_bytes: int
    state_bytes: int
    checksum: bytes
    expected_step: int | None
    expected_version: int
    epoch: int | None
    snapshot_step: int
    chain_bytes: int
    prune_below: int | None
    seal_step: int | None
    metadata: str | None
    token: bytes
    blobs: tuple[BlobRow, ...] = ()
    history: tuple[HistoryRow, ...] = ()
    # The writer computes its next step while this write is made durable (the run
    # loop's overlap): it must not be sent on the event loop's own thread.
    overlapped: bool = False

    @property
    def codec(self) -> str:
        """The payload's codec (packs it if it is not yet)."""
        return self.stored.codec

    @property
    def payload(self) -> bytes:
        """The payload's bytes (packs it if it is not yet)."""
        return self.stored.data

    def positional(self) -> tuple[Any, ...]:
        """The parameters of :meth:`params`, in its order, as a tuple (``$1`` is
        ``run_id``, ..., ``$21`` is ``write_token``): a tuple slice of the fields, where
        the dict takes 21 stores and the driver a lookup of each name."""
        return self[:5] + self.stored.pack() + self[6:20]

    def params(self) -> dict[str, Any]:
        """The named parameters of the commit statements."""
        return {
            "run_id": self.run_id,
            "step": self.step,
            "parent_step": self.parent_step,
            "kind": self.kind,
            "is_open": self.is_open,
            "codec": self.codec,
            "payload": self.payload,
            "state_version": self.state_version,
            "write_version": self.write_version,
            "raw_bytes": self.raw_bytes,
            "state_bytes": self.state_bytes,
            "checksum": self.checksum,
            "expected_step": self.expected_step,
            "expected_version": self.expected_version,
            "epoch": self.epoch,
            "snapshot_step": self.snapshot_step,
            "chain_bytes": self.chain_bytes,
            "prune_below": self.prune_below,
            "seal_step": self.seal_step,
            "metadata": self.metadata,
            "write_token": self.token,
        }


def layers(writes: Sequence[StepWrite]) -> list[list[StepWrite]]:
    """A batch split so that each part holds at most one write of a run: the first
    write of each run, then the second, ... (a run's writes in a batch are its next
    steps, in order, each guarded by the one before). A batch of different runs is one
    part; the parts are written in order, in one transaction."""
    if len(writes) == 1:
        return [list(writes)]  # the lone commit, every commit of a lone writer
    counts: dict[UUID, int] = {}
    parts: list[list[StepWrite]] = []
    for write in writes:
        depth = counts.get(write.run_id, 0)
        counts[write.run_id] = depth + 1
        if depth == len(parts):
            parts.append([])
        parts[depth].append(write)
    return parts


TOKEN_BYTES = 16
# Tokens drawn from the OS at a time: os.urandom is a system call that releases the
# GIL, 5.5 us of CPU and 124 us of wall time (getting the GIL back from the SQLite
# worker thread) a call on the event loop thread in the saturated conversation write
# phase, once a commit; drawn 256 at a time it is paid once every 256 commits.
_TOKENS_AT_A_TIME = 256


class _Tokens:
    """Write tokens from ``os.urandom``, drawn ``_TOKENS_AT_A_TIME`` at once; a forked
    child drops the parent's (it would hand out the same ones) and draws its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left: list[bytes] = []

    def take(self) -> bytes:
        with self._lock:
            if not self._left:
                raw = os.urandom(TOKEN_BYTES * _TOKENS_AT_A_TIME)
                self._left = [raw[i : i + TOKEN_BYTES] for i in range(0, len(raw), TOKEN_BYTES)]
            return self._left.pop()

    def forget(self) -> None:
        # In the child right after a fork: the lock may have been held by another of the
        # parent's threads, so both are new.
        self._lock = threading.Lock()
        self._left = []


_tokens = _Tokens()
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_tokens.forget)


def new_token() -> bytes:
    """A write token: ``TOKEN_BYTES`` random bytes from the OS, never handed out twice
    (in this process or a child forked from it)."""
    return _tokens.take()


@dataclass(frozen=True, slots=True)
class Committed:
    """The commit is durable; the database clock's timestamps of the step row."""

    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Refused:
    """The guard matched no row; ``probe`` is the run's head and the step as stored now.

    ``probe`` is None when the run does not exist.
    """

    probe: Row | None


CommitOutcome = Committed | Refused


__all__ = [
    "BlobRow",
    "CommitOutcome",
    "Committed",
    "HistoryRow",
    "Payload",
    "Refused",
    "Row",
    "StepWrite",
    "layers",
    "new_token",
]
