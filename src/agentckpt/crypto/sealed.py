"""The sealed-value format: one encrypted value, self-describing.

::

    magic b"\\xa7CK" | version (1) | cipher id (1) | key id length (1) | key id (ASCII)
    | nonce (12) | ciphertext | tag (16)

The header (everything before the ciphertext) and the kind of value (``step``, ``blob``,
``history``, ``effect``, ``config``, ``metadata``) are the associated data, so a value
cannot be moved to another kind of column, nor its key id or cipher changed, without the
tag failing. The run id is deliberately not bound: forks and imports copy sealed bytes
to other runs unchanged. The first byte, 0xA7, can start neither a JSON document nor a
zstd frame, so a sealed ``config`` is told from a clear one by its first bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentckpt.crypto.ciphers import NONCE_BYTES, TAG_BYTES, Cipher, cipher_by_id
from agentckpt.errors import CorruptDataError

MAGIC = b"\xa7CK"
VERSION = 1
# A data key id: what the keyring stores it under (``dk-`` and 16 hex digits when
# agentckpt makes one); at most 255 ASCII bytes, as its length is one byte.
KEY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,255}$")
_FIXED = len(MAGIC) + 3


@dataclass(frozen=True, slots=True)
class Header:
    """What a sealed value says about itself."""

    cipher: Cipher
    key_id: str
    nonce: bytes
    size: int  # header bytes, so the ciphertext is ``sealed[size:]``

    def aad(self, sealed: bytes, kind: str) -> bytes:
        """The associated data: the header bytes and the kind of value."""
        return sealed[: self.size] + kind.encode("ascii")


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` starts like a sealed value (the store also records it per row)."""
    return bytes(data[: len(MAGIC)]) == MAGIC


def header_bytes(cipher: Cipher, key_id: str, nonce: bytes) -> bytes:
    """The header of a value sealed with ``cipher`` under data key ``key_id``."""
    raw_id = key_id.encode("ascii")
    return MAGIC + bytes((VERSION, cipher.id, len(raw_id))) + raw_id + nonce


def read_header(sealed: bytes, *, where: str) -> Header:
    """Parse a sealed value's header; :class:`CorruptDataError` if it is not one."""
    data = bytes(sealed[: _FIXED + 255 + NONCE_BYTES])
    if len(data) < _FIXED or not is_sealed(data):
        raise CorruptDataError(f"{where}: value is not sealed (bad magic)")
    version, cipher_id, id_len = data[len(MAGIC) : _FIXED]
    if version != VERSION:
        raise CorruptDataError(f"{where}: sealed value has unknown format version {version}")
    cipher = cipher_by_id(cipher_id, where=where)
    size = _FIXED + id_len + NONCE_BYTES
    if len(sealed) < size + TAG_BYTES:
        raise CorruptDataError(f"{where}: sealed value is truncated")
    try:
        key_id = data[_FIXED : _FIXED + id_len].decode("ascii")
    except UnicodeDecodeError:
        raise CorruptDataError(f"{where}: sealed value has a non-ASCII key id") from None
    if not KEY_ID.match(key_id):
        raise CorruptDataError(f"{where}: sealed value has a malformed key id")
    return Header(cipher, key_id, data[_FIXED + id_len : size], size)
