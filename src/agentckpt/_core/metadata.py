"""Run metadata: small JSON objects kept queryable in the database (JSONB on PostgreSQL).

Unlike states, metadata goes into a JSON column, so it must also satisfy the column:
no U+0000 anywhere (JSONB rejects it and SQLite's JSON functions truncate at it), and a
bounded size. Key order is not kept (JSONB sorts keys).
"""

from __future__ import annotations

from typing import Any

import orjson

from agentckpt._core.codec import Limits, exact_encoding, validate
from agentckpt.errors import InvalidValueError

MAX_METADATA_BYTES = 64 * 1024
_LIMITS = Limits(max_depth=16, max_bytes=MAX_METADATA_BYTES)


def _check_nul(value: Any, path: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidValueError(path, "metadata strings cannot contain U+0000")
    elif isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                raise InvalidValueError(path, "metadata keys cannot contain U+0000")
            _check_nul(item, f"{path}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_nul(item, f"{path}/{index}")


def encode_metadata(metadata: dict[str, Any] | None) -> str | None:
    """Validate metadata and return its JSON text, or None for no metadata."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidValueError("", f"metadata must be a dict, not {type(metadata).__name__}")
    data = exact_encoding(metadata, _LIMITS.max_depth)
    if data is None:
        try:
            validate(metadata, limits=_LIMITS)
        except InvalidValueError as exc:
            raise InvalidValueError(exc.path, f"metadata: {exc.reason}") from None
        _check_nul(metadata, "")
        try:
            data = orjson.dumps(metadata)
        except TypeError:
            # orjson refuses integers outside 64 bits, which JSONB would change to numeric.
            raise InvalidValueError("", "metadata integers must fit in 64 bits") from None
    elif b"\\u0000" in data:
        # orjson writes U+0000 as this escape; a text holding these six characters
        # is a false alarm, which only costs the walk.
        _check_nul(metadata, "")
    text = data.decode()
    if len(text) > MAX_METADATA_BYTES:
        raise InvalidValueError(
            "", f"metadata is {len(text)} bytes encoded; the limit is {MAX_METADATA_BYTES}"
        )
    return text


def decode_metadata(text: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """Metadata as read from either backend."""
    if text is None:
        return {}
    if isinstance(text, dict):
        return text
    value = orjson.loads(text)
    return value if isinstance(value, dict) else {}
