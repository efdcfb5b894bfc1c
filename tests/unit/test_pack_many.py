import json
import os

from agentckpt._core.compression import PLAIN, ZSTD, pack, pack_many
from agentckpt._core.writes import Payload


def _raws() -> list[bytes]:
    docs = [json.dumps({f"k{i}": "v" * i * 7 for i in range(n)}).encode() for n in range(0, 40)]
    return [*docs, os.urandom(600), b"", b"x" * 255, b"x" * 256, os.urandom(256)]


def test_pack_many_same_bytes_as_pack() -> None:
    raws = _raws()
    assert pack_many(raws) == [pack(r) for r in raws]
    codecs = {codec for codec, _ in pack_many(raws)}
    assert codecs == {PLAIN, ZSTD}


def test_pack_many_one_and_none() -> None:
    assert pack_many([]) == []
    assert pack_many([b"x" * 1000]) == [pack(b"x" * 1000)]


def test_pack_all_same_as_pack() -> None:
    raws = _raws()
    one = [Payload.of(r) for r in raws]
    many = [Payload.of(r) for r in raws]
    many[3].pack()
    Payload.pack_all(many)
    assert all(p.is_packed() for p in many)
    assert [p.pack() for p in many] == [p.pack() for p in one]
