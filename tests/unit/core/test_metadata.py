"""Metadata encoding: the fast path refuses what the checks refuse, with the same path."""

from __future__ import annotations

import enum
import math
from typing import Any

import orjson
import pytest

from agentckpt._core.metadata import decode_metadata, encode_metadata
from agentckpt.errors import InvalidValueError


@pytest.mark.parametrize(
    "metadata",
    [
        {"a": 1, "b": [1.5, None, "x"], "c": {"d": True}},
        {"text": "\\u0000 written out, not a NUL"},
        {"é": "😀"},
        {},
    ],
)
def test_valid_metadata_is_its_json(metadata: dict[str, Any]) -> None:
    text = encode_metadata(metadata)
    assert text is not None
    assert text == orjson.dumps(metadata).decode()
    assert decode_metadata(text) == metadata


@pytest.mark.parametrize(
    ("metadata", "path", "words"),
    [
        ({"a": {"b": "x\x00"}}, "/a/b", "U+0000"),
        ({"a": [{"k\x00": 1}]}, "/a/0", "U+0000"),
        ({"a": ["\\u0000", "\x00"]}, "/a/1", "U+0000"),
        ({"a": (1, 2)}, "/a", "tuple"),
        ({"a": [math.nan]}, "/a/0", "NaN"),
        ({"a": enum.Enum("E", "X").X}, "/a", "not a JSON type"),
        ({"a": 2**64}, "", "64 bits"),
    ],
)
def test_bad_metadata_is_refused_with_its_path(
    metadata: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(InvalidValueError) as info:
        encode_metadata(metadata)
    assert info.value.path == path
    assert words in info.value.reason
