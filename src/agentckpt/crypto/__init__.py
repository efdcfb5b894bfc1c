"""Encryption at rest: envelope encryption of a store's payloads (``agentckpt[crypto]``).

Data keys (one or a few per store) seal every step payload, blob, history segment, run
config and effect result with an AEAD (AES-256-GCM by default) after compression; each
data key is stored wrapped by a key-encryption key (KEK) that a :class:`KeyProvider`
holds. See docs/security.md, "Encryption at rest".
"""

from __future__ import annotations

from agentckpt.crypto.ciphers import AES_256_GCM, CHACHA20_POLY1305, Cipher
from agentckpt.crypto.keyring import DataKey, Keyring
from agentckpt.crypto.providers import KeyProvider, StaticKeys, env_keys, file_keys, new_key
from agentckpt.crypto.sealing import Sealing
from agentckpt.crypto.settings import Encryption

__all__ = [
    "AES_256_GCM",
    "CHACHA20_POLY1305",
    "Cipher",
    "DataKey",
    "Encryption",
    "KeyProvider",
    "Keyring",
    "Sealing",
    "StaticKeys",
    "env_keys",
    "file_keys",
    "new_key",
]
