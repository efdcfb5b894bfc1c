"""Blobs: large values moved out of a state into content-addressed, compressed storage.

A state keeps a small reference object in place of the value::

    {"$blob": "sha256:9f86d0...", "uri": "db:sha256:9f86d0...", "size": 48213,
     "codec": "zstd"}

``$blob`` is the sha256 of the original bytes, so equal values share one stored blob
and every read is verified. ``codec`` says how the stored bytes were compressed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import zstandard

from agentckpt._core.compression import zstd_compress
from agentckpt.errors import CorruptDataError, InvalidValueError

BLOB_KEY = "$blob"
_PREFIX = "sha256:"


@dataclass(frozen=True, slots=True)
class BlobRef:
    """A reference to a stored blob; ``digest`` is the hex sha256 of the original bytes."""

    digest: str
    size: int
    codec: str
    uri: str

    def to_json(self) -> dict[str, Any]:
        """The reference as it is kept inside a state."""
        return {
            BLOB_KEY: _PREFIX + self.digest,
            "uri": self.uri,
            "size": self.size,
            "codec": self.codec,
        }

    @classmethod
    def from_json(cls, value: Any) -> BlobRef:
        """Parse a reference found in a state; :class:`InvalidValueError` if it is not one."""
        if not is_ref(value):
            raise InvalidValueError("", f"not a blob reference: {value!r:.80}")
        return cls(
            digest=value[BLOB_KEY][len(_PREFIX) :],
            size=int(value["size"]),
            codec=str(value["codec"]),
            uri=str(value["uri"]),
        )


def is_ref(value: Any) -> bool:
    """True for a blob reference object as produced by :meth:`BlobRef.to_json`."""
    return (
        type(value) is dict
        and isinstance(value.get(BLOB_KEY), str)
        and value[BLOB_KEY].startswith(_PREFIX)
        and "uri" in value
        and "size" in value
        and "codec" in value
    )


def digest_of(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def compress(data: bytes) -> tuple[str, bytes]:
    """``(codec, stored bytes)``; zstd unless that would not be smaller."""
    packed = zstd_compress(data)
    if len(packed) < len(data):
        return "zstd", packed
    return "none", data


def decompress(codec: str, stored: bytes, *, digest: str, where: str) -> bytes:
    """The original bytes, verified against ``digest``; :class:`CorruptDataError` if not."""
    if codec == "zstd":
        try:
            data = zstandard.decompress(stored)
        except zstandard.ZstdError as exc:
            raise CorruptDataError(f"{where}: blob {digest} does not decompress: {exc}") from exc
    elif codec == "none":
        data = bytes(stored)
    else:
        raise CorruptDataError(f"{where}: blob {digest} has unknown codec {codec!r}")
    actual = digest_of(data)
    if actual != digest:
        raise CorruptDataError(
            f"{where}: blob content does not match its sha256 (expected {digest}, got {actual})"
        )
    return data


def db_uri(digest: str) -> str:
    """The URI of a blob kept in the database's blobs table."""
    return f"db:sha256:{digest}"
