"""Values LangGraph's serializer wrote (``{"$serde": [type, data]}``), decoded for reading.

The decoding is LangGraph's own ``JsonPlusSerializer``, imported when first needed and
only if it is installed. It runs in strict mode: only the types LangGraph lists as safe
(LangChain messages, ``Interrupt``, ``Send``, datetimes, ...) are constructed; any other
stored type comes back as its constructor arguments, so reading a store never imports or
runs code the store names. The result is made plain JSON for display (pydantic models
and dataclasses as objects of their fields). Without LangGraph, or when the bytes do not
decode, the value is an :class:`Undecoded` placeholder that says what it is.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt.ops.kinds import SERDE_KEY, TEXT_KEY, is_wrapper

__all__ = ["Decoder", "Undecoded", "plain"]

log = logging.getLogger("agentckpt.ops")

# Nesting beyond this is shown as a placeholder: a display has no use for it.
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Undecoded:
    """A stored value that could not be decoded here: its serializer type, its size in
    bytes, the blob that holds it (if one does) and why it was not decoded."""

    type: str
    size: int
    reason: str
    ref: BlobRef | None = None

    def to_json(self) -> dict[str, Any]:
        """The placeholder as shown in a state tree."""
        return {"undecoded": self.type, "bytes": self.size, "reason": self.reason}


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON values: models and dataclasses as their fields, the rest as text."""
    if depth > _MAX_DEPTH:
        return "…"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value)}
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return plain(dump(), depth + 1)
        except Exception:  # a model that cannot dump itself is shown as text
            return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    return repr(value)


def _load_serializer() -> Any | None:
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError:
        return None
    # allowed_msgpack_modules=None: strict, only LangGraph's safe types are constructed.
    return JsonPlusSerializer(allowed_msgpack_modules=None)


class Decoder:
    """Decodes serializer-wrapped values; ``blob`` fetches a blob's bytes (or None to
    leave blob-held values undecoded). One decoder serves one page: it caches nothing
    but the serializer."""

    def __init__(self, blob: Callable[[BlobRef], bytes | None] | None = None) -> None:
        self._blob = blob
        self._serde: Any = None
        self._loaded = False

    @property
    def available(self) -> bool:
        """True when LangGraph's serializer is installed."""
        return self._serializer() is not None

    def _serializer(self) -> Any | None:
        if not self._loaded:
            self._serde, self._loaded = _load_serializer(), True
        return self._serde

    def loads(self, type_: str, data: bytes) -> Any:
        """One serialized value, as plain JSON, or an :class:`Undecoded` placeholder."""
        serde = self._serializer()
        if serde is None:
            return Undecoded(type_, len(data), "LangGraph is not installed")
        try:
            return plain(serde.loads_typed((type_, data)))
        except Exception as exc:  # whatever the stored bytes make the serializer raise
            log.debug("undecodable %s value: %s", type_, exc)
            return Undecoded(type_, len(data), f"does not decode: {type(exc).__name__}")

    def value(self, value: Any) -> Any:
        """A stored channel value or list item: unwrapped when it is a wrapper."""
        if not is_wrapper(value):
            return value
        if TEXT_KEY in value:
            ref = BlobRef.from_json(value[TEXT_KEY])
            data = self._blob(ref) if self._blob else None
            if data is None:
                return Undecoded("text", ref.size, "held in a blob", ref)
            return data.decode("utf-8", errors="replace")
        type_, data = value[SERDE_KEY]
        if is_ref(data):
            ref = BlobRef.from_json(data)
            raw = self._blob(ref) if self._blob else None
            if raw is None:
                return Undecoded(str(type_), ref.size, "held in a blob", ref)
            return self.loads(str(type_), raw)
        try:
            raw = base64.b64decode(data, validate=True)
        except (ValueError, TypeError):
            return Undecoded(str(type_), 0, "not base64")
        return self.loads(str(type_), raw)

    def tree(self, value: Any, depth: int = 0) -> Any:
        """A whole state with every wrapper decoded (placeholders as JSON objects)."""
        if depth > _MAX_DEPTH:
            return value
        if is_wrapper(value):
            decoded = self.value(value)
            return decoded.to_json() if isinstance(decoded, Undecoded) else decoded
        if isinstance(value, dict):
            return {k: self.tree(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.tree(v, depth + 1) for v in value]
        return value
