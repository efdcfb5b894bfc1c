"""pack/unpack: each thread keeps its own zstd contexts, and a payload that does not
decompress leaves the thread's decompressor usable for the next one."""

from __future__ import annotations

import threading

import pytest

from agentckpt._core.compression import PLAIN, ZSTD, pack, unpack
from agentckpt.errors import CorruptDataError

DOCS = [(b'{"turn":%d,"text":"' % i) + b"word " * (50 + i) + b'"}' for i in range(40)]


def test_round_trip_and_small_payloads_stay_plain() -> None:
    assert pack(b'{"a":1}') == (PLAIN, b'{"a":1}')
    for doc in DOCS:
        codec, payload = pack(doc)
        assert codec == ZSTD
        assert unpack(codec, payload, where="test") == doc


def test_a_corrupt_payload_is_typed_and_the_next_one_decompresses() -> None:
    codec, payload = pack(DOCS[0])
    damaged = payload[:8] + bytes(b ^ 0xFF for b in payload[8:16]) + payload[16:]
    with pytest.raises(CorruptDataError, match="run r step 3: zstd payload does not decompress"):
        unpack(codec, damaged, where="run r step 3")
    assert unpack(codec, payload, where="test") == DOCS[0]


def test_threads_unpack_at_once_with_their_own_contexts() -> None:
    packed = [pack(doc) for doc in DOCS]
    results: list[list[bytes]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append([unpack(c, p, where="t") for _ in range(50) for c, p in packed][-40:])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results == [DOCS] * 4
