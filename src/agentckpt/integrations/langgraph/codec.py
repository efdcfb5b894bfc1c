"""A LangGraph checkpoint as a JSON state that deltas well, and back; no I/O, no imports
of LangGraph (its serializer is passed in).

The state of the step that stores a checkpoint::

    {"id": "<checkpoint id>",
     "checkpoint": {"v": 4, "ts": ..., "channel_versions": ..., ...},   # minus id, values
     "values": {"<channel>": <value>, ...}}

A channel value that is exact JSON stays JSON, so the store's deltas see inside it. A list
is encoded item by item, so a message list that grows by one message costs one ``add``
op even though LangGraph's messages are objects: each item that is not exact JSON becomes
``{"$serde": [type, base64]}`` from the saver's serializer. An item or string larger than
``blob_threshold`` bytes moves to the blob table and leaves a reference
(``{"$serde": [type, ref]}`` or ``{"$text": ref}``). Only a value or list item that is
a one-key object with one of those two keys is read as a wrapper, and the encoder wraps
any plain value of that shape, so every JSON value round-trips. The layout's facts (the
wrapper keys, what is a wrapper) live in :mod:`agentckpt.ops.kinds`, which the inspector
reads stored threads with.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agentckpt._core.blobs import BlobRef, compress, db_uri, digest_of, is_ref
from agentckpt._core.codec import DEFAULT_LIMITS, Limits, decode, encode_trusted, validate
from agentckpt._core.writes import BlobRow
from agentckpt.errors import CorruptDataError, InvalidValueError
from agentckpt.integrations.langgraph.records import PendingWrite
from agentckpt.ops.kinds import SERDE_KEY, TEXT_KEY, is_wrapper, wrapper_refs

__all__ = ["DEFAULT_BLOB_THRESHOLD", "CheckpointCodec", "Serde"]

# The design's default: values past 4 KB leave the state for the blob table.
DEFAULT_BLOB_THRESHOLD = 4096


class Serde(Protocol):
    """LangGraph's serializer protocol (``SerializerProtocol``)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


def _pointer(key: Any) -> str:
    """``key`` as one JSON Pointer (RFC 6901) reference token."""
    return str(key).replace("~", "~0").replace("/", "~1")


def _blob(data: bytes, blobs: dict[str, BlobRow]) -> dict[str, Any]:
    digest = digest_of(data)
    if digest not in blobs:
        codec, stored = compress(data)
        blobs[digest] = BlobRow(digest=digest, codec=codec, size=len(data), data=stored)
    row = blobs[digest]
    return BlobRef(digest=digest, size=row.size, codec=row.codec, uri=db_uri(digest)).to_json()


@dataclass(frozen=True, slots=True)
class CheckpointCodec:
    """Encodes checkpoints, metadata and writes with ``serde`` for what is not JSON.

    ``inline_json=False`` sends every value through ``serde`` (use it with an encrypting
    serializer, so that nothing is stored in clear); list items are still wrapped one by
    one, so appends stay small deltas.
    """

    serde: Serde
    inline_json: bool = True
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD
    limits: Limits = DEFAULT_LIMITS

    # -- encoding -------------------------------------------------------------------

    def encode_state(
        self, checkpoint: Mapping[str, Any]
    ) -> tuple[dict[str, Any], tuple[BlobRow, ...]]:
        """The state that stores ``checkpoint``, and the blobs it refers to."""
        blobs: dict[str, BlobRow] = {}
        rest = {k: v for k, v in checkpoint.items() if k not in ("id", "channel_values")}
        values: dict[str, Any] = {}
        for name, value in checkpoint.get("channel_values", {}).items():
            where = f"/channel_values/{_pointer(name)}"
            if type(value) is list:
                # Depth: state -> values -> list -> item.
                values[name] = [
                    self._item(item, blobs, depth=4, path=f"{where}/{i}")
                    for i, item in enumerate(value)
                ]
            else:
                values[name] = self._item(value, blobs, depth=3, path=where)
        state = {
            "id": checkpoint["id"],
            "checkpoint": self._item(rest, blobs, depth=2, offload=False, path=""),
            "values": values,
        }
        return state, tuple(blobs.values())

    def encode_metadata(self, metadata: Mapping[str, Any]) -> str:
        """Metadata as exact JSON text (serializer-wrapped if it is not JSON)."""
        value: Any = dict(metadata)
        if not (self.inline_json and self._plain(value, depth=0)):
            value = self._wrap(value, {}, offload=False, path="/metadata")
        return encode_trusted(value).decode("utf-8")

    def encode_write(
        self, task_id: str, task_path: str, idx: int, channel: str, value: Any
    ) -> PendingWrite:
        """A pending write, serialized by ``serde``."""
        type_, payload = self._dumps(value, f"/writes/{_pointer(channel)}")
        return PendingWrite(
            task_id=task_id,
            channel=channel,
            idx=idx,
            task_path=task_path,
            type=type_,
            payload=bytes(payload),
        )

    def _plain(self, value: Any, *, depth: int) -> bool:
        """True if ``value`` is stored as JSON: exact, not too deep, not wrapper-shaped."""
        if is_wrapper(value):
            return False
        try:
            validate(value, limits=Limits(max_depth=max(1, self.limits.max_depth - depth)))
        except InvalidValueError:
            return False
        return True

    def _item(
        self,
        value: Any,
        blobs: dict[str, BlobRow],
        *,
        depth: int,
        path: str,
        offload: bool = True,
    ) -> Any:
        if self.inline_json and self._plain(value, depth=depth):
            if offload and type(value) is str and len(value) > self.blob_threshold:
                data = value.encode("utf-8")
                if len(data) > self.blob_threshold:
                    return {TEXT_KEY: _blob(data, blobs)}
            return value
        return self._wrap(value, blobs, offload=offload, path=path)

    def _dumps(self, value: Any, path: str) -> tuple[str, bytes]:
        """``serde.dumps_typed(value)``; what it cannot encode (an int past 64 bits, a
        value nested past msgpack's limit) is an :class:`InvalidValueError` at ``path``,
        not the serializer's own ``TypeError``, before anything is written."""
        try:
            return self.serde.dumps_typed(value)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise InvalidValueError(
                path, f"LangGraph's serializer cannot encode it ({type(exc).__name__}: {exc})"
            ) from exc

    def _wrap(
        self, value: Any, blobs: dict[str, BlobRow], *, offload: bool, path: str
    ) -> dict[str, Any]:
        type_, data = self._dumps(value, path)
        if offload and len(data) > self.blob_threshold:
            return {SERDE_KEY: [type_, _blob(bytes(data), blobs)]}
        return {SERDE_KEY: [type_, base64.b64encode(data).decode("ascii")]}

    # -- decoding -------------------------------------------------------------------

    def decode_checkpoint(
        self, state: Mapping[str, Any], blobs: Mapping[str, bytes]
    ) -> dict[str, Any]:
        """The checkpoint that :meth:`encode_state` stored as ``state``."""
        rest = self._unwrap(state["checkpoint"], blobs)
        values: dict[str, Any] = {}
        for name, value in state["values"].items():
            if type(value) is list:
                values[name] = [self._unwrap(item, blobs) for item in value]
            else:
                values[name] = self._unwrap(value, blobs)
        checkpoint: dict[str, Any] = {}
        # LangGraph's field order: v, id, ts, channel_values, then the rest.
        for key, value in rest.items():
            checkpoint[key] = value
            if key == "v":
                checkpoint["id"] = state["id"]
            elif key == "ts":
                checkpoint["channel_values"] = values
        checkpoint.setdefault("id", state["id"])
        checkpoint.setdefault("channel_values", values)
        return checkpoint

    def metadata(self, text: str) -> dict[str, Any]:
        """Decode metadata stored by :meth:`encode_metadata`."""
        value = self._unwrap(decode(text.encode("utf-8")), {})
        if not isinstance(value, dict):
            raise CorruptDataError(f"checkpoint metadata is a {type(value).__name__}, not a dict")
        return value

    def decode_write(self, write: PendingWrite) -> Any:
        """The value of a pending write."""
        return self.serde.loads_typed((write.type, write.payload))

    def _unwrap(self, value: Any, blobs: Mapping[str, bytes]) -> Any:
        if not is_wrapper(value):
            return value
        if TEXT_KEY in value:
            return self._blob_bytes(value[TEXT_KEY], blobs).decode("utf-8")
        type_, data = value[SERDE_KEY]
        raw = self._blob_bytes(data, blobs) if is_ref(data) else base64.b64decode(data)
        return self.serde.loads_typed((type_, raw))

    @staticmethod
    def _blob_bytes(ref: Any, blobs: Mapping[str, bytes]) -> bytes:
        digest = BlobRef.from_json(ref).digest
        try:
            return blobs[digest]
        except KeyError:
            raise CorruptDataError(f"blob {digest} of a checkpoint was not loaded") from None

    def blob_refs(self, state: Any) -> Iterator[BlobRef]:
        """The blobs a stored state refers to."""
        if type(state) is not dict:
            return
        yield from wrapper_refs(state.get("checkpoint"))
        values = state.get("values")
        if type(values) is dict:
            for value in values.values():
                items: Iterable[Any] = value if type(value) is list else (value,)
                for item in items:
                    yield from wrapper_refs(item)
