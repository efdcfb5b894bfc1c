"""Payload compression: zstd when it pays, with the codec recorded beside the bytes."""

from __future__ import annotations

import zstandard

from ..errors import CorruptDataError

PLAIN = "json"
ZSTD = "json+zstd"

# Below this size zstd's frame header eats most of the gain; store the bytes as they are.
MIN_COMPRESS_BYTES = 256
ZSTD_LEVEL = 3


def pack(raw: bytes, *, min_bytes: int = MIN_COMPRESS_BYTES) -> tuple[str, bytes]:
    """Return ``(codec, payload)``: compressed if that is smaller, else the raw bytes."""
    if len(raw) >= min_bytes:
        packed = zstandard.compress(raw, ZSTD_LEVEL)
        if len(packed) < len(raw):
            return ZSTD, packed
    return PLAIN, raw


def unpack(codec: str, payload: bytes, *, where: str) -> bytes:
    """Inverse of :func:`pack`; ``where`` names the row in the error if it fails."""
    if codec == PLAIN:
        return bytes(payload)
    if codec == ZSTD:
        try:
            return zstandard.decompress(payload)
        except zstandard.ZstdError as exc:
            raise CorruptDataError(f"{where}: zstd payload does not decompress: {exc}") from exc
    raise CorruptDataError(f"{where}: unknown payload codec {codec!r}")
