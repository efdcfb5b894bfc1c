"""Payload: packed once, when first read, into what pack() gives; given bytes stay as they are."""

from __future__ import annotations

import pytest

from agentckpt._core import writes
from agentckpt._core.compression import PLAIN, ZSTD, pack
from agentckpt._core.writes import Payload

DOC = b'{"text":"' + b"word " * 200 + b'"}'


def test_a_document_is_packed_once_when_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []

    def counting_pack(raw: bytes) -> tuple[str, bytes]:
        calls.append(raw)
        return pack(raw)

    monkeypatch.setattr(writes, "pack", counting_pack)
    payload = Payload.of(DOC)
    assert payload.size() == len(DOC)  # not packed to be measured
    assert calls == []
    assert not payload.is_packed()
    assert (payload.codec, payload.data) == pack(DOC)
    assert payload.pack() == pack(DOC)
    assert calls == [DOC]
    assert payload.is_packed()
    assert payload.size() == len(pack(DOC)[1]) < len(DOC)
    assert pack(DOC)[0] == ZSTD


def test_small_documents_and_given_bytes_are_stored_as_they_are() -> None:
    small = Payload.of(b'{"a":1}')
    assert (small.codec, small.data, small.size()) == (PLAIN, b'{"a":1}', 7)
    given = Payload.packed("json+zstd+sealed", b"opaque")
    assert (given.codec, given.data, given.size()) == ("json+zstd+sealed", b"opaque", 6)
    assert "unpacked" in repr(Payload.of(DOC))
    assert "sealed" in repr(given)
