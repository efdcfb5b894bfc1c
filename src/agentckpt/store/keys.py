# GENERATED from keys_async.py by scripts/unasync.py; do not edit.
"""A store's data keys in its ``data_keys`` table (async source of ``keys.py``).

The keyring (:mod:`agentckpt.crypto.keyring`) is pure; this module loads it from the
table, stores the data keys it makes, and records rotations. Every statement is a
single-row insert or compare-and-swap update, so concurrent processes opening the same
store, or a rotation killed halfway, leave the table consistent.
"""

from __future__ import annotations

from agentckpt._backends.base import Backend
from agentckpt.crypto.keyring import RETIRED, DataKey, Keyring, new_data_key, rewrap
from agentckpt.crypto.sealing import Sealing
from agentckpt.crypto.settings import Encryption
from agentckpt.errors import StoreError
from agentckpt.store import queries


class KeyTable:
    """The ``data_keys`` rows of one store."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def load(self) -> list[DataKey]:
        """Every data key, oldest first."""
        return [DataKey.from_row(r) for r in self.backend.read(queries.LOAD_DATA_KEYS, {})]

    def insert(self, key: DataKey) -> None:
        """Store a new data key (wrapped)."""
        self.backend.write(
            queries.INSERT_DATA_KEY,
            {
                "key_id": key.key_id,
                "kek_id": key.kek_id,
                "cipher": key.cipher,
                "wrapped": key.wrapped,
                "state": key.state,
            },
        )

    def rewrap(self, new: DataKey, old_kek_id: str) -> bool:
        """Replace a data key's wrapping, if it is still wrapped by ``old_kek_id``."""
        rows = self.backend.write(
            queries.REWRAP_DATA_KEY,
            {
                "key_id": new.key_id,
                "kek_id": new.kek_id,
                "wrapped": new.wrapped,
                "old_kek_id": old_kek_id,
            },
        )
        return bool(rows)

    def set_state(self, key_id: str, state: str, *, old_state: str) -> bool:
        """Move a data key from ``old_state`` to ``state``; False if it was not in it."""
        rows = self.backend.write(
            queries.SET_DATA_KEY_STATE, {"key_id": key_id, "state": state, "old_state": old_state}
        )
        return bool(rows)

    def refresh(self, keyring: Keyring) -> None:
        """Reload the keyring from the table (a key another process made since)."""
        keyring.load(self.load())

    def new_active(self, keyring: Keyring) -> DataKey:
        """Make, store and activate a new data key under the current KEK."""
        key, plain = new_data_key(keyring.provider, keyring.cipher)
        self.insert(key)
        keyring.add(key, plain)
        return key

    def rewrap_all(self, keyring: Keyring) -> list[tuple[str, str]]:
        """Re-wrap every data key not wrapped by the current KEK (``keys rotate``);
        returns (data key id, the KEK it was wrapped by) for each one re-wrapped."""
        done = []
        current = keyring.provider.current_key_id()
        for key in self.load():
            if key.kek_id == current:
                continue
            if self.rewrap(rewrap(keyring.provider, key), key.kek_id):
                done.append((key.key_id, key.kek_id))
        self.refresh(keyring)
        return done


def open_sealing(backend: Backend, encryption: Encryption | None) -> Sealing:
    """The store's :class:`Sealing`: off without ``encryption``; else the keyring from
    the table, with a new active data key if none is wrapped by the current KEK (the
    first open, or a new KEK: new writes use it at once)."""
    table = KeyTable(backend)
    if encryption is None:
        try:
            keys = table.load()
        except StoreError:
            return Sealing()  # a schema before migration 0009 (migrate=False)
        return Sealing(locked=any(k.state != RETIRED for k in keys))
    keyring = Keyring(encryption.keys, encryption.cipher, table.load())
    if keyring.active is None:
        table.new_active(keyring)
    return Sealing(keyring, metadata=encryption.metadata)
