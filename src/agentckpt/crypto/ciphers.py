"""The authenticated ciphers a sealed value may use, by name and by the id in its header.

Both come from ``cryptography`` (the ``agentckpt[crypto]`` extra), which is imported only
when a store opens with encryption on, so a store without it never needs the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentckpt.errors import ConfigurationError, CorruptDataError

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16


@dataclass(frozen=True, slots=True)
class Cipher:
    """One AEAD: its name in settings and docs, its id byte in a sealed value's header."""

    name: str
    id: int

    def aead(self, key: bytes) -> Any:
        """A ``cryptography`` AEAD object for ``key`` (32 bytes)."""
        aead = _aead_classes()[self.name]
        return aead(key)

    def encrypt(self, key: bytes, nonce: bytes, data: bytes, aad: bytes) -> bytes:
        """Ciphertext and tag of ``data``."""
        return bytes(self.aead(key).encrypt(nonce, data, aad))

    def decrypt(self, key: bytes, nonce: bytes, data: bytes, aad: bytes) -> bytes:
        """The plaintext; ``cryptography``'s ``InvalidTag`` if anything was changed."""
        return bytes(self.aead(key).decrypt(nonce, data, aad))


AES_256_GCM = Cipher("aes-256-gcm", 1)
CHACHA20_POLY1305 = Cipher("chacha20-poly1305", 2)
DEFAULT_CIPHER = AES_256_GCM
CIPHERS = {c.name: c for c in (AES_256_GCM, CHACHA20_POLY1305)}
_BY_ID = {c.id: c for c in CIPHERS.values()}


def _aead_classes() -> dict[str, Any]:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ConfigurationError(
            f"encryption needs the cryptography package ({exc}): pip install 'agentckpt[crypto]'"
        ) from exc
    return {AES_256_GCM.name: AESGCM, CHACHA20_POLY1305.name: ChaCha20Poly1305}


def invalid_tag() -> type[Exception]:
    """``cryptography``'s exception for a failed authentication tag."""
    try:
        from cryptography.exceptions import InvalidTag
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ConfigurationError(
            f"encryption needs the cryptography package ({exc}): pip install 'agentckpt[crypto]'"
        ) from exc
    return InvalidTag


def cipher_named(name: str) -> Cipher:
    """The cipher called ``name``; :class:`ConfigurationError` for an unknown one."""
    try:
        return CIPHERS[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown cipher {name!r}; use one of {', '.join(sorted(CIPHERS))}"
        ) from None


def cipher_by_id(cipher_id: int, *, where: str) -> Cipher:
    """The cipher a header names; an unknown id is corrupt (or newer) data."""
    try:
        return _BY_ID[cipher_id]
    except KeyError:
        raise CorruptDataError(
            f"{where}: sealed value names unknown cipher id {cipher_id}"
        ) from None
