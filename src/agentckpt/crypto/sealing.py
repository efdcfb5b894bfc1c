"""Sealing a store's values: the one transform the store applies to bytes it writes.

Values are sealed after compression and opened before decompression. A sealed row's
codec gets the suffix ``+sealed`` (``json+zstd+sealed``, ``zstd+sealed``), so every
reader knows from the row alone that it must open it, and a reader that cannot (a store
opened without encryption, an older agentckpt) fails with a clear error instead of
misreading ciphertext. Run config has no codec column: a sealed config is told by its
first bytes (:func:`agentckpt.crypto.sealed.is_sealed`). Metadata values, when
encrypted, become strings with the prefix ``agentckpt:sealed:`` (base64), so the keys
stay queryable.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import orjson

from agentckpt._core.metadata import decode_metadata, encode_metadata
from agentckpt._core.writes import BlobRow, HistoryRow, Payload
from agentckpt.crypto.keyring import Keyring
from agentckpt.crypto.sealed import is_sealed, read_header
from agentckpt.errors import CorruptDataError, KeyUnavailableError

SEALED = "+sealed"
METADATA_PREFIX = "agentckpt:sealed:"

# The kinds of value, bound to each sealed value (its associated data).
STEP = "step"
BLOB = "blob"
HISTORY = "history"
EFFECT = "effect"
CONFIG = "config"
METADATA = "metadata"
KINDS = (STEP, BLOB, HISTORY, EFFECT, CONFIG, METADATA)


def is_sealed_codec(codec: str) -> bool:
    """Whether a row's codec says its bytes are sealed."""
    return codec.endswith(SEALED)


class Sealing:
    """What a store does to its values: nothing (``keyring`` None) or seal and open them.

    ``metadata``: also seal run metadata values (their keys stay in clear).
    """

    def __init__(
        self, keyring: Keyring | None = None, *, metadata: bool = False, locked: bool = False
    ) -> None:
        self.keyring = keyring
        self.metadata = metadata and keyring is not None
        # An encrypted store opened without its keys: it may read what is clear, but it
        # must not write a value in clear beside the sealed ones.
        self.locked = locked and keyring is None

    @property
    def enabled(self) -> bool:
        """Whether new values are sealed."""
        return self.keyring is not None

    def __repr__(self) -> str:
        return f"Sealing(enabled={self.enabled}, metadata={self.metadata})"

    # -- writing ---------------------------------------------------------------------

    def seal(self, kind: str, codec: str, payload: bytes) -> tuple[str, bytes]:
        """``(codec, payload)`` as stored: sealed when encryption is on."""
        if self.keyring is None:
            self._refuse_clear(kind)
            return codec, payload
        return codec + SEALED, self.keyring.seal(kind, payload)

    def seal_payload(self, kind: str, payload: Payload) -> Payload:
        """A step's payload as stored: sealed (packed first, here) when encryption is
        on; else ``payload`` itself, still packed only when the backend reads it."""
        if self.keyring is None:
            self._refuse_clear(kind)
            return payload
        return Payload.packed(payload.codec + SEALED, self.keyring.seal(kind, payload.data))

    def seal_config(self, config: bytes) -> bytes:
        """A run's config bytes as stored."""
        if self.keyring is None:
            self._refuse_clear(CONFIG)
            return config
        return self.keyring.seal(CONFIG, config)

    def seal_metadata(self, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """Metadata with each value sealed when metadata encryption is on."""
        if metadata is None or not self.metadata or self.keyring is None:
            return metadata
        keyring = self.keyring
        return {
            key: METADATA_PREFIX
            + base64.b64encode(keyring.seal(METADATA, orjson.dumps(value))).decode("ascii")
            for key, value in metadata.items()
        }

    def seal_bytes(self, kind: str, data: bytes) -> bytes:
        """Bytes kept outside the database (a blob directory, S3), sealed when on."""
        if self.keyring is None:
            self._refuse_clear(kind)
            return data
        return self.keyring.seal(kind, data)

    def _refuse_clear(self, kind: str) -> None:
        if self.locked:
            raise KeyUnavailableError(
                f"this store is encrypted (it has data keys): writing a {kind} needs "
                "Store.connect(url, encryption=...) with its key provider; nothing was written",
                key_id="",
            )

    def seal_blob(self, row: BlobRow) -> BlobRow:
        """A blob row as stored."""
        codec, data = self.seal(BLOB, row.codec, row.data)
        return row if codec == row.codec else BlobRow(row.digest, codec, row.size, data)

    def seal_history(self, row: HistoryRow) -> HistoryRow:
        """A history segment row as stored."""
        codec, payload = self.seal(HISTORY, row.codec, row.payload)
        if codec == row.codec:
            return row
        return HistoryRow(row.seq, row.item_count, codec, payload, row.raw_bytes)

    def encode_metadata(self, metadata: dict[str, Any] | None) -> str | None:
        """Metadata validated in clear, then as stored (values sealed if asked)."""
        text = encode_metadata(metadata)
        if text is None or not self.metadata:
            return text
        return encode_metadata(self.seal_metadata(metadata))

    # -- reading ---------------------------------------------------------------------

    def _keyring(self, data: bytes, run_id: UUID | None, where: str) -> Keyring:
        if self.keyring is not None:
            return self.keyring
        key_id = read_header(data, where=where).key_id
        run = f"run {run_id} " if run_id is not None else ""
        raise KeyUnavailableError(
            f"{run}{where} is encrypted under data key {key_id}; open the store with "
            "encryption= and its key provider",
            key_id=key_id,
            run_id=run_id,
        )

    def open(
        self, kind: str, codec: str, payload: bytes, *, run_id: UUID | None, where: str
    ) -> tuple[str, bytes]:
        """``(codec, payload)`` as they were before sealing; clear rows pass through."""
        if not is_sealed_codec(codec):
            return codec, payload
        keyring = self._keyring(payload, run_id, where)
        return codec.removesuffix(SEALED), keyring.open(kind, payload, run_id=run_id, where=where)

    def open_rows(
        self,
        kind: str,
        rows: Sequence[dict[str, Any]],
        *,
        run_id: UUID | None = None,
        column: str = "payload",
    ) -> list[dict[str, Any]]:
        """Rows with their sealed ``column`` opened and ``codec`` restored (new dicts)."""
        opened = []
        for row in rows:
            codec = row.get("codec")
            if codec is None or not is_sealed_codec(codec):
                opened.append(row)
                continue
            rid = row.get("run_id", run_id)
            where = _where(kind, row)
            codec, data = self.open(kind, codec, bytes(row[column]), run_id=rid, where=where)
            opened.append({**row, "codec": codec, column: data})
        return opened

    def open_bytes(self, kind: str, data: bytes, *, where: str) -> bytes:
        """Bytes from :meth:`seal_bytes` as they were. Clear bytes (written before the
        store was encrypted) pass through: the blob's sha256, checked by the caller,
        still catches any change to them."""
        if not is_sealed(data):
            return data
        keyring = self._keyring(data, None, where)
        return keyring.open(kind, data, run_id=None, where=where)

    def open_config(self, config: bytes, *, run_id: UUID | None) -> bytes:
        """A run's config bytes as they were before sealing."""
        if not is_sealed(config):
            return config
        keyring = self._keyring(config, run_id, "config")
        return keyring.open(CONFIG, config, run_id=run_id, where="config")

    def open_run_rows(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """``runs`` rows with their config bytes and metadata values opened."""
        opened = []
        for row in rows:
            config, metadata = row.get("config"), row.get("metadata")
            rid = row.get("run_id")
            if config is not None and is_sealed(bytes(config)):
                row = {**row, "config": self.open_config(bytes(config), run_id=rid)}
            if metadata is not None and METADATA_PREFIX in str(metadata):
                row = {**row, "metadata": self.open_metadata(decode_metadata(metadata), run_id=rid)}
            opened.append(row)
        return opened

    def open_metadata(self, metadata: dict[str, Any], *, run_id: UUID | None) -> dict[str, Any]:
        """Metadata with its sealed values opened."""
        if not any(isinstance(v, str) and v.startswith(METADATA_PREFIX) for v in metadata.values()):
            return metadata
        result = {}
        for key, value in metadata.items():
            if isinstance(value, str) and value.startswith(METADATA_PREFIX):
                where = f"metadata {key!r}"
                try:
                    sealed = base64.b64decode(value[len(METADATA_PREFIX) :], validate=True)
                except binascii.Error:
                    raise CorruptDataError(
                        f"run {run_id} {where}: sealed value is not base64"
                    ) from None
                keyring = self._keyring(sealed, run_id, where)
                value = orjson.loads(keyring.open(METADATA, sealed, run_id=run_id, where=where))
            result[key] = value
        return result


def _where(kind: str, row: dict[str, Any]) -> str:
    for name in ("step", "seq", "digest", "key"):
        if name in row and row[name] is not None:
            return f"{kind} {row[name]}" if name != "key" else f"{kind} {row['key']!r}"
    return kind
