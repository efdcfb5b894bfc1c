"""Payload compression: zstd when it pays, with the codec recorded beside the bytes."""

from __future__ import annotations

import threading

import zstandard

from agentckpt.errors import CorruptDataError

PLAIN = "json"
ZSTD = "json+zstd"

# Below this size zstd's frame header eats most of the gain; store the bytes as they are.
MIN_COMPRESS_BYTES = 256
ZSTD_LEVEL = 3

# A compressor (and a decompressor) keeps its context between calls (creating one per
# call costs more than compressing a small delta); a context must not be shared by
# threads, hence one each.
_local = threading.local()


def zstd_compress(data: bytes) -> bytes:
    """``data`` as one zstd frame at ``ZSTD_LEVEL``, with this thread's compressor."""
    compressor: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return compressor.compress(data)


def pack(raw: bytes, *, min_bytes: int = MIN_COMPRESS_BYTES) -> tuple[str, bytes]:
    """Return ``(codec, payload)``: compressed if that is smaller, else the raw bytes."""
    if len(raw) >= min_bytes:
        packed = zstd_compress(raw)
        if len(packed) < len(raw):
            return ZSTD, packed
    return PLAIN, raw


def pack_many(raws: list[bytes], *, min_bytes: int = MIN_COMPRESS_BYTES) -> list[tuple[str, bytes]]:
    """:func:`pack` of each of ``raws``, with the same bytes, in one zstd call that
    releases the GIL for the whole batch (frames identical to one-at-a-time ``compress``)."""
    todo = [i for i, raw in enumerate(raws) if len(raw) >= min_bytes]
    out: list[tuple[str, bytes]] = [(PLAIN, raw) for raw in raws]
    if len(todo) < 2:
        for i in todo:
            out[i] = pack(raws[i], min_bytes=min_bytes)
        return out
    compressor: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    frames = compressor.multi_compress_to_buffer([raws[i] for i in todo])
    for n, i in enumerate(todo):
        packed = frames[n].tobytes()
        if len(packed) < len(raws[i]):
            out[i] = (ZSTD, packed)
    return out


def unpack(codec: str, payload: bytes, *, where: str) -> bytes:
    """Inverse of :func:`pack`; ``where`` names the row in the error if it fails."""
    if codec == PLAIN:
        return bytes(payload)
    if codec == ZSTD:
        decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
        if decompressor is None:
            # zstandard.decompress() builds a context per call: 13 us against 0.6 us for a
            # small payload, and a resume decompresses a snapshot and its deltas.
            decompressor = _local.decompressor = zstandard.ZstdDecompressor()
        try:
            return decompressor.decompress(payload)
        except zstandard.ZstdError as exc:
            raise CorruptDataError(f"{where}: zstd payload does not decompress: {exc}") from exc
    raise CorruptDataError(f"{where}: unknown payload codec {codec!r}")
