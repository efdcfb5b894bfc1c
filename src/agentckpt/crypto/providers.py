"""Key providers: where the key-encryption keys (KEKs) live.

A provider wraps and unwraps data keys; agentckpt never sees a KEK that the provider
keeps elsewhere (a cloud KMS, Vault's transit engine). The interface is three methods::

    class KeyProvider(Protocol):
        def current_key_id(self) -> str: ...             # the KEK new data keys use
        def wrap(self, key_id, data_key, context) -> bytes: ...
        def unwrap(self, key_id, wrapped, context) -> bytes: ...

``context`` is bytes naming the data key (its id); a provider binds it to the wrapped
key (AEAD associated data, a KMS encryption context), so a wrapped key cannot be passed
off as another. A KEK the provider does not have (removed, revoked) or that does not
open the wrapped key raises :class:`~agentckpt.errors.KeyUnavailableError`.

The built-in providers hold the KEKs in memory: :class:`StaticKeys` (keys given in code),
:func:`env_keys` (an environment variable) and :func:`file_keys` (a key file). The text
form of both is entries ``<key id>:<base64 of 32 bytes>``, comma- or newline-separated,
``#`` starting a comment line; the first entry is the current KEK, the others stay
readable (keep an old KEK listed until ``agentckpt keys rotate`` has re-wrapped its data
keys).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentckpt.crypto.ciphers import AES_256_GCM, KEY_BYTES, NONCE_BYTES, invalid_tag
from agentckpt.crypto.sealed import KEY_ID
from agentckpt.errors import ConfigurationError, KeyUnavailableError

__all__ = ["KeyProvider", "StaticKeys", "env_keys", "file_keys", "new_key", "parse_keys"]


@runtime_checkable
class KeyProvider(Protocol):
    """Wraps and unwraps data keys with key-encryption keys it names by id."""

    def current_key_id(self) -> str:
        """The id of the KEK that wraps new data keys."""
        ...

    def wrap(self, key_id: str, data_key: bytes, context: bytes) -> bytes:
        """``data_key`` encrypted under KEK ``key_id``, bound to ``context``."""
        ...

    def unwrap(self, key_id: str, wrapped: bytes, context: bytes) -> bytes:
        """The data key from :meth:`wrap`; :class:`KeyUnavailableError` if it cannot."""
        ...


def new_key() -> bytes:
    """32 random bytes from the operating system: a new KEK or data key."""
    return secrets.token_bytes(KEY_BYTES)


class StaticKeys:
    """KEKs held in memory: ``{key id: 32 bytes}``, the first (or ``current``) for new keys.

    Example::

        keys = StaticKeys({"kek-2026": key_bytes})
        store = Store.connect(url, encryption=Encryption(keys=keys))
    """

    def __init__(self, keys: Mapping[str, bytes], *, current: str | None = None) -> None:
        if not keys:
            raise ConfigurationError("encryption: the key provider holds no key")
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not KEY_ID.match(key_id):
                raise ConfigurationError(
                    f"encryption: key id {key_id!r} must be 1-255 characters of A-Z a-z 0-9 . _ : -"
                )
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise ConfigurationError(f"encryption: key {key_id} must be {KEY_BYTES} bytes")
        self._keys = dict(keys)
        self._current = current if current is not None else next(iter(self._keys))
        if self._current not in self._keys:
            raise ConfigurationError(f"encryption: current key {self._current!r} is not given")

    def __repr__(self) -> str:
        # Never the key material: only which ids are held.
        return f"StaticKeys(ids={sorted(self._keys)!r}, current={self._current!r})"

    def key_ids(self) -> list[str]:
        """The ids of the KEKs held, current first."""
        return [self._current, *sorted(k for k in self._keys if k != self._current)]

    def current_key_id(self) -> str:
        """The KEK new data keys are wrapped with."""
        return self._current

    def wrap(self, key_id: str, data_key: bytes, context: bytes) -> bytes:
        """AES-256-GCM under the KEK: nonce, then ciphertext and tag."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + AES_256_GCM.encrypt(self._key(key_id), nonce, data_key, context)

    def unwrap(self, key_id: str, wrapped: bytes, context: bytes) -> bytes:
        """The data key; :class:`KeyUnavailableError` for a missing or wrong KEK."""
        kek = self._key(key_id)
        try:
            return AES_256_GCM.decrypt(kek, wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], context)
        except invalid_tag():
            raise KeyUnavailableError(
                f"key-encryption key {key_id} does not unwrap {context.decode('ascii', 'replace')}"
                " (a wrong key under that id, or a damaged wrapped key)",
                key_id=key_id,
            ) from None

    def _key(self, key_id: str) -> bytes:
        try:
            return self._keys[key_id]
        except KeyError:
            raise KeyUnavailableError(
                f"key-encryption key {key_id} is not held by the key provider "
                f"(it holds {', '.join(self.key_ids())})",
                key_id=key_id,
            ) from None


def parse_keys(text: str, *, source: str) -> StaticKeys:
    """Keys from their text form (``id:base64`` entries); ``source`` names it in errors."""
    keys: dict[str, bytes] = {}
    for number, entry in enumerate(text.replace(",", "\n").splitlines(), 1):
        entry = entry.strip()
        if not entry or entry.startswith("#"):
            continue
        key_id, sep, encoded = entry.partition(":")
        # Key ids may hold ':' themselves; the key is after the last one.
        if sep:
            key_id, _, encoded = entry.rpartition(":")
        try:
            key = base64.b64decode(encoded.strip(), validate=True) if sep else b""
        except binascii.Error:
            key = b""
        if not sep or len(key) != KEY_BYTES:
            raise ConfigurationError(
                f"encryption: {source} entry {number} is not <key id>:<base64 of {KEY_BYTES} bytes>"
            )
        if key_id in keys:
            raise ConfigurationError(f"encryption: {source} names key {key_id} twice")
        keys[key_id.strip()] = key
    if not keys:
        raise ConfigurationError(f"encryption: {source} holds no key")
    return StaticKeys(keys)


def env_keys(name: str = "AGENTCKPT_KEYS") -> StaticKeys:
    """KEKs from the environment variable ``name``, read now."""
    text = os.environ.get(name)
    if text is None:
        raise ConfigurationError(f"encryption: environment variable {name} is not set")
    return parse_keys(text, source=f"environment variable {name}")


def file_keys(path: str | os.PathLike[str]) -> StaticKeys:
    """KEKs from a key file, read now (keep it readable by the application only)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"encryption: key file {path} cannot be read: {exc.strerror}"
        ) from None
    return parse_keys(text, source=f"key file {path}")
