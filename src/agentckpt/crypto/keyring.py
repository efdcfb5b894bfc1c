"""Envelope encryption: the data keys of a store, wrapped by the provider's KEKs.

A store keeps its data keys in the ``data_keys`` table, each wrapped by one KEK
(``kek_id``). The keyring holds those rows, unwraps a data key the first time a value
under it is read or written, and seals and opens values. No I/O here: the store loads and
saves the rows (:mod:`agentckpt.store.keys_async`).

Data key states: ``active`` (new values may be sealed under it), ``retiring`` (being
re-encrypted away by ``agentckpt keys rotate --reencrypt``; still readable), ``retired``
(no value uses it any more; its wrapped key is kept only as a record).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from agentckpt.crypto.ciphers import NONCE_BYTES, Cipher, invalid_tag
from agentckpt.crypto.providers import KeyProvider, new_key
from agentckpt.crypto.sealed import header_bytes, read_header
from agentckpt.errors import CorruptDataError, KeyUnavailableError

ACTIVE = "active"
RETIRING = "retiring"
RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class DataKey:
    """One row of ``data_keys``: a data key as stored, wrapped (never in clear)."""

    key_id: str
    kek_id: str
    cipher: str
    wrapped: bytes = field(repr=False)  # not key material, but no need to print it either
    state: str = ACTIVE

    @staticmethod
    def from_row(row: dict[str, Any]) -> DataKey:
        """A ``data_keys`` row as read by either backend."""
        return DataKey(
            key_id=row["key_id"],
            kek_id=row["kek_id"],
            cipher=row["cipher"],
            wrapped=bytes(row["wrapped"]),
            state=row["state"],
        )


def context(key_id: str) -> bytes:
    """What a wrapped data key is bound to: its own id."""
    return f"agentckpt data key {key_id}".encode("ascii")


def new_data_key(provider: KeyProvider, cipher: Cipher) -> tuple[DataKey, bytes]:
    """A fresh data key wrapped by the provider's current KEK, and the key itself."""
    key_id = f"dk-{secrets.token_hex(8)}"
    key = new_key()
    kek_id = provider.current_key_id()
    wrapped = provider.wrap(kek_id, key, context(key_id))
    return DataKey(key_id=key_id, kek_id=kek_id, cipher=cipher.name, wrapped=wrapped), key


def rewrap(provider: KeyProvider, data_key: DataKey) -> DataKey:
    """``data_key`` wrapped by the provider's current KEK (the key itself is unchanged)."""
    ctx = context(data_key.key_id)
    key = provider.unwrap(data_key.kek_id, data_key.wrapped, ctx)
    kek_id = provider.current_key_id()
    return DataKey(
        key_id=data_key.key_id,
        kek_id=kek_id,
        cipher=data_key.cipher,
        wrapped=provider.wrap(kek_id, key, ctx),
        state=data_key.state,
    )


class UnknownDataKey(CorruptDataError):
    """A sealed value names a data key the keyring does not hold (yet): the store reloads
    its keys once and, if the key is still unknown, the bytes are corrupt."""

    def __init__(self, message: str, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id


class Keyring:
    """A store's data keys: seals new values under the active one, opens any of them.

    Thread-safe: a sync store may be shared by threads; unwrapped keys are cached.
    """

    def __init__(self, provider: KeyProvider, cipher: Cipher, keys: Iterable[DataKey]) -> None:
        self.provider = provider
        self.cipher = cipher
        self._lock = threading.Lock()
        self._keys: dict[str, DataKey] = {}
        self._plain: dict[str, bytes] = {}
        # One AEAD object per data key: building one per value costs more than sealing
        # a small delta. cryptography's AEAD objects hold no per-call state.
        self._aeads: dict[str, Any] = {}
        self.active: str | None = None
        # The data key this process made (on opening a store with a new KEK, say).
        self.made: str | None = None
        self.load(keys)

    def __repr__(self) -> str:
        return f"Keyring(active={self.active!r}, keys={sorted(self._keys)!r})"

    def load(self, keys: Iterable[DataKey]) -> None:
        """(Re)load the table's rows; the active key is the newest usable ``active`` one
        wrapped by the provider's current KEK (rows come oldest first)."""
        current = self.provider.current_key_id()
        with self._lock:
            for key in keys:
                old = self._keys.get(key.key_id)
                if old is not None and old.wrapped != key.wrapped:
                    self._plain.pop(key.key_id, None)
                    self._aeads.pop(key.key_id, None)
                self._keys[key.key_id] = key
            candidates = [
                k.key_id
                for k in self._keys.values()
                if k.state == ACTIVE and k.kek_id == current and k.cipher == self.cipher.name
            ]
            self.active = candidates[-1] if candidates else None

    def add(self, key: DataKey, plain: bytes) -> None:
        """A data key this process just created (and stored); it becomes the active one."""
        with self._lock:
            self._keys[key.key_id] = key
            self._plain[key.key_id] = plain
            self.active = self.made = key.key_id

    def keys(self) -> list[DataKey]:
        """Every data key the keyring holds, in load order."""
        with self._lock:
            return list(self._keys.values())

    def has(self, key_id: str) -> bool:
        """Whether the keyring holds data key ``key_id``."""
        with self._lock:
            return key_id in self._keys

    def _key(self, key_id: str, *, run_id: UUID | None, where: str) -> bytes:
        with self._lock:
            plain = self._plain.get(key_id)
            record = self._keys.get(key_id)
        if plain is not None:
            return plain
        if record is None:
            raise UnknownDataKey(
                f"{where}: sealed under data key {key_id}, which this store does not have", key_id
            )
        try:
            plain = self.provider.unwrap(record.kek_id, record.wrapped, context(key_id))
        except KeyUnavailableError as exc:
            run = f"run {run_id}: " if run_id is not None else ""
            raise KeyUnavailableError(
                f"{run}{where}: data key {key_id} cannot be unwrapped: {exc}",
                key_id=exc.key_id,
                run_id=run_id,
            ) from None
        with self._lock:
            self._plain[key_id] = plain
        return plain

    def seal(self, kind: str, plaintext: bytes, *, key_id: str | None = None) -> bytes:
        """``plaintext`` sealed under the active data key (or ``key_id``)."""
        kid = key_id or self.active
        if kid is None:
            raise RuntimeError("the keyring has no active data key; the store creates one")
        aead = self._aead(kid, self.cipher, run_id=None, where=f"sealing a {kind}")
        nonce = secrets.token_bytes(NONCE_BYTES)
        header = header_bytes(self.cipher, kid, nonce)
        return header + bytes(aead.encrypt(nonce, plaintext, header + kind.encode()))

    def _aead(self, key_id: str, cipher: Cipher, *, run_id: UUID | None, where: str) -> Any:
        cache = f"{key_id}/{cipher.name}"
        aead = self._aeads.get(cache)
        if aead is None:
            aead = cipher.aead(self._key(key_id, run_id=run_id, where=where))
            self._aeads[cache] = aead
        return aead

    def key_id_of(self, sealed: bytes, *, where: str = "value") -> str:
        """The data key a sealed value names."""
        return read_header(sealed, where=where).key_id

    def open(self, kind: str, sealed: bytes, *, run_id: UUID | None, where: str) -> bytes:
        """The plaintext of a sealed value.

        :class:`CorruptDataError` if the bytes were changed (the tag fails), or name a
        data key the store never had; :class:`KeyUnavailableError` (naming the run and
        the key) if the data key's KEK is missing or wrong.
        """
        sealed = bytes(sealed)
        label = f"run {run_id} {where}" if run_id is not None else where
        header = read_header(sealed, where=label)
        aead = self._aead(header.key_id, header.cipher, run_id=run_id, where=where)
        try:
            return bytes(
                aead.decrypt(header.nonce, sealed[header.size :], header.aad(sealed, kind))
            )
        except invalid_tag():
            raise CorruptDataError(
                f"{label}: sealed value fails its authentication tag (data key "
                f"{header.key_id}): the bytes were changed"
            ) from None
