"""Tests for the exact JSON codec: round trips, refusals with their paths, strict equality."""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import sys
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentckpt._core import codec
from agentckpt._core.codec import (
    DEFAULT_LIMITS,
    Limits,
    decode,
    encode,
    encode_trusted,
    same,
    validate,
)
from agentckpt.errors import ConfigurationError, CorruptDataError, InvalidValueError
from tests.unit.core import strategies

SPECIAL_TEXT = ["", "\x00", "\\u0000", "a\x00b\\u0000c", "\U0001f600", "é", "\u2028", "~", "/"]
SPECIAL_NUMBERS: list[Any] = [
    0,
    -0.0,
    0.0,
    1,
    1.0,
    True,
    False,
    None,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    2**200,
    -(2**200),
    1e-300,
    5e-324,
    -5e-324,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    1e16,
    1e22,
    0.1,
]

json_values = strategies.json_values(SPECIAL_TEXT, SPECIAL_NUMBERS, text_size=12)

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def nested(depth: int) -> Any:
    """A value with exactly ``depth`` levels of containers, alternating lists and dicts."""
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# --- round trips ---------------------------------------------------------------------------


@PROPERTY
@given(json_values)
def test_round_trip_is_exact(value: Any) -> None:
    data = encode(value)
    assert isinstance(data, bytes)
    data.decode("utf-8")  # always valid UTF-8
    back = decode(data)
    assert same(back, value)
    assert back == value
    assert encode(back) == data


@PROPERTY
@given(json_values, json_values)
def test_same_agrees_with_encoding(a: Any, b: Any) -> None:
    assert same(a, b) == (encode(a) == encode(b))
    assert same(a, decode(encode(a)))


@pytest.mark.parametrize("value", SPECIAL_NUMBERS + SPECIAL_TEXT, ids=repr)
def test_round_trip_special_scalars(value: Any) -> None:
    back = decode(encode(value))
    assert type(back) is type(value)
    assert same(back, value)


def test_round_trip_keeps_key_order_and_unicode() -> None:
    value = {"z": 1, "a": [None, "\x00", "\\u0000"], "é": {"\U0001f600": -0.0}, "": 2**70}
    back = decode(encode(value))
    assert list(back) == ["z", "a", "é", ""]
    assert back["a"][1] == "\x00"
    assert back["a"][2] == "\\u0000"
    assert len(back["a"][2]) == 6
    assert same(back, value)


def test_nul_and_escaped_nul_stay_distinct_on_both_encoder_paths() -> None:
    for extra in (1, 2**64):  # 2**64 forces the stdlib encoder
        value = ["\x00", "\\u0000", extra]
        back = decode(encode(value))
        assert back[0] == "\x00"
        assert back[1] == "\\u0000"
        assert same(back, value)


def test_big_integers_survive_inside_documents() -> None:
    value = {"small": 1, "float": 1.5, "big": [2**64, -(2**63) - 1, 10**100], "neg0": -0.0}
    back = decode(encode(value))
    assert back["big"] == [2**64, -(2**63) - 1, 10**100]
    assert all(type(x) is int for x in back["big"])
    assert same(back, value)


def test_integer_of_19_digits_inside_a_string_is_harmless() -> None:
    value = {"id": "1234567890123456789012345", "n": 3, "f": 0.5}
    assert same(decode(encode(value)), value)


def test_deep_structure_at_the_limit_round_trips() -> None:
    value = nested(DEFAULT_LIMITS.max_depth)
    assert same(decode(encode(value)), value)


def test_deeper_than_orjson_allows_falls_back_to_stdlib() -> None:
    limits = Limits(max_depth=400)
    value = nested(400)
    assert same(decode(encode(value, limits=limits)), value)


# --- refusals ------------------------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1


class Label(str):
    pass


class Weird:
    pass


REFUSED: list[tuple[Any, str, str]] = [
    (float("nan"), "", "nan"),
    ({"a": float("nan")}, "/a", "nan"),
    ({"a": [0, {"b": float("inf")}]}, "/a/1/b", "inf"),
    ([1, -float("inf")], "/1", "-inf"),
    ({"messages": [{}, {}, {}, {"content": "ok\ud800"}]}, "/messages/3/content", "U+D800"),
    ("\udfff", "", "lone surrogate"),
    ({"a/b": {"~k": (1, 2)}}, "/a~1b/~0k", "tuple"),
    ({1: "x"}, "", "not str"),
    ({"a": {2: 1}}, "/a", "dict key 2 has type int, not str"),
    ({"a": {"\udc00": 1}}, "/a", "surrogate"),
    ({"a": {Label("k"): 1}}, "/a", "Label"),
    ({"s": {1, 2}}, "/s", "set"),
    ({"s": frozenset()}, "/s", "frozenset"),
    ({"b": b"bytes"}, "/b", "bytes"),
    ({"t": datetime.datetime(2024, 1, 1)}, "/t", "datetime.datetime"),
    ({"d": datetime.date(2024, 1, 1)}, "/d", "datetime.date"),
    ({"u": uuid.UUID(int=0)}, "/u", "uuid.UUID"),
    ({"n": decimal.Decimal("1.1")}, "/n", "decimal.Decimal"),
    ([Weird()], "/0", "Weird"),
    ([[Color.RED]], "/0/0", "subclass of int"),
    ({"x": Label("v")}, "/x", "subclass of str"),
    ({"o": collections.OrderedDict(a=1)}, "/o", "subclass of dict"),
    ({"l": collections.UserList()}, "/l", "UserList"),
]


@pytest.mark.parametrize(("value", "path", "text"), REFUSED, ids=lambda x: repr(x)[:30])
def test_refused_values_name_their_path(value: Any, path: str, text: str) -> None:
    with pytest.raises(InvalidValueError) as info:
        validate(value)
    assert info.value.path == path
    assert text in info.value.reason
    assert text in str(info.value)
    with pytest.raises(InvalidValueError) as again:
        encode(value)
    assert again.value.path == path


def test_refusal_path_starts_with_the_given_prefix() -> None:
    with pytest.raises(InvalidValueError) as info:
        validate({"a": [float("nan")]}, path="/state")
    assert info.value.path == "/state/a/0"


def test_subclass_reason_says_how_to_fix() -> None:
    with pytest.raises(InvalidValueError, match=r"convert it with int\(\.\.\.\)"):
        validate(Color.RED)


def test_too_deep_is_refused_with_path_of_the_offending_container() -> None:
    limits = Limits(max_depth=3)
    validate(nested(3), limits=limits)
    with pytest.raises(InvalidValueError) as info:
        validate({"a": [{"b": []}]}, limits=limits)
    assert info.value.path == "/a/0/b"
    assert "deeper than the limit of 3" in info.value.reason


def test_default_depth_limit() -> None:
    with pytest.raises(InvalidValueError, match="deeper than the limit of 200"):
        encode(nested(201))


def test_reference_cycle_is_refused_not_looping() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(InvalidValueError, match="cycle"):
        validate(cycle)


def test_integer_too_long_for_text_is_refused() -> None:
    huge = 10 ** (sys.get_int_max_str_digits() + 10)
    with pytest.raises(InvalidValueError) as info:
        validate({"n": [huge]})
    assert info.value.path == "/n/0"
    assert "decimal digits" in info.value.reason


def test_encoded_size_limit() -> None:
    limits = Limits(max_bytes=10)
    assert encode("12345678", limits=limits) == b'"12345678"'
    with pytest.raises(InvalidValueError) as info:
        encode("x" * 100, limits=limits)
    assert info.value.path == ""
    assert "102 bytes" in info.value.reason
    assert "limit of 10 bytes" in info.value.reason


@pytest.mark.parametrize(
    "kwargs", [{"max_depth": 0}, {"max_depth": 5000}, {"max_bytes": 0}, {"max_depth": 2.0}]
)
def test_bad_limits_are_configuration_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Limits(**kwargs)


# --- decoding ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"18446744073709551616", 2**64),
        (b"-9223372036854775809", -(2**63) - 1),
        (b"[9999999999999999999]", [9999999999999999999]),
        (b'{"a":1' + b"0" * 80 + b"}", {"a": 10**80}),
        (b'[12345678901234567890,"\\ud83d\\ude00"]', [12345678901234567890, "\U0001f600"]),
        (b'[12345678901234567890,"\\\\ud800"]', [12345678901234567890, "\\ud800"]),
    ],
)
def test_decode_keeps_big_integers_exact(data: bytes, expected: Any) -> None:
    # orjson would turn these integers into floats; the codec must notice.
    assert same(decode(data), expected)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b'"\xed\xa0\x80"',  # an encoded surrogate
        b"[1e400]",
        b"[NaN]",
        b"[12345678901234567890, NaN]",
        b"[12345678901234567890, 1e400]",
        b"[12345678901234567890, -Infinity]",
        b'"\\ud800"',
        b'[12345678901234567890,"\\ud800"]',
        b"[" * 5000 + b"]" * 5000,
        b"[12345678901234567890," + b"[" * 5000 + b"]" * 5001,  # deep, on the stdlib path
        b"1" * 5000,
        b"[1," + b"2" * 5000 + b"]",
    ],
    ids=lambda d: repr(d)[:30],
)
def test_undecodable_bytes_are_corrupt_data(data: bytes) -> None:
    with pytest.raises(CorruptDataError, match="cannot be decoded"):
        decode(data)


def test_decode_accepts_bytes_like() -> None:
    assert decode(bytearray(b"[1]")) == [1]
    assert decode(memoryview(b"[12345678901234567890]")) == [12345678901234567890]


# --- strict equality -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 1.0, False),
        (1, True, False),
        (0, False, False),
        (0.0, -0.0, False),
        ([0.0], [-0.0], False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}, True),
        ([1, [2, {"x": None}]], [1, [2, {"x": None}]], True),
        ([1], [1.0], False),
        ({"x": [True]}, {"x": [1]}, False),
        (None, None, True),
        ("a", "a", True),
        (2**70, 2**70, True),
        ([2**70, 1], [2**70, 1.0], False),
        ([2**70, {"a": 1, "b": 2}], [2**70, {"b": 2, "a": 1}], False),
        ([2**70, -0.0], [2**70, 0.0], False),
        (2**70, float(2**70), False),
        ([], {}, False),
        ("1", 1, False),
    ],
)
def test_same_is_strict(a: Any, b: Any, expected: bool) -> None:
    assert same(a, b) is expected
    assert same(b, a) is expected


def test_same_handles_values_orjson_cannot_encode() -> None:
    # Past 254 levels orjson refuses to encode, so same() walks the values instead.
    assert same([nested(300), 1], [nested(300), 1])
    assert not same([nested(300), 1], [nested(300), 1.0])
    assert not same([nested(300), {"a": 1, "b": 2}], [nested(300), {"b": 2, "a": 1}])
    assert not same([nested(300), -0.0], [nested(300), 0.0])
    assert not same([nested(300), True], [nested(300), 1])


# Longer than codec._SAME_CHUNK, so same() compares the encodings chunk by chunk.
LONG = 3 * codec._SAME_CHUNK + 5


def _messages(count: int) -> list[Any]:
    return [
        {"role": "user", "content": f"message {i}", "n": i, "x": 0.5, "y": 0.0, "b": 1}
        for i in range(count)
    ]


# Changes that keep a message == to what it was but change its encoding.
def _int_to_float(message: dict[str, Any]) -> None:
    message["n"] = float(message["n"])


def _negative_zero(message: dict[str, Any]) -> None:
    message["y"] = -0.0


def _bool_for_int(message: dict[str, Any]) -> None:
    message["b"] = True


def _keys_reordered(message: dict[str, Any]) -> None:
    message["role"] = message.pop("role")


@pytest.mark.parametrize(
    "index", [0, codec._SAME_CHUNK - 1, codec._SAME_CHUNK, 2 * codec._SAME_CHUNK + 3, LONG - 1]
)
@pytest.mark.parametrize("change", [_int_to_float, _negative_zero, _bool_for_int, _keys_reordered])
def test_same_on_long_lists_sees_a_strict_change_in_any_chunk(index: int, change: Any) -> None:
    a, b = _messages(LONG), _messages(LONG)
    assert same(a, b)
    change(b[index])
    assert a == b  # only the strict comparison tells them apart
    assert encode(a) != encode(b)
    assert not same(a, b)
    assert not same(b, a)


def test_same_on_long_lists_falls_back_to_the_walk() -> None:
    # A value orjson cannot encode (past 254 levels) in a late chunk: the walk decides.
    a, b = _messages(LONG), _messages(LONG)
    a[-1]["deep"] = nested(300)
    b[-1]["deep"] = nested(300)
    assert same(a, b)
    _int_to_float(b[3])
    assert not same(a, b)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, -0.0, 1.0]), st.just("a")
)


@settings(max_examples=50, deadline=None)
@given(st.lists(_scalars, min_size=LONG, max_size=LONG), st.data())
def test_same_on_long_lists_agrees_with_encoding(items: list[Any], data: Any) -> None:
    other = [decode(encode(item)) for item in items]
    assert same(items, other)
    index = data.draw(st.integers(0, LONG - 1))
    other[index] = data.draw(_scalars)
    assert same(items, other) == (encode(items) == encode(other))


def test_same_identity_fast_path() -> None:
    value = [1, {"a": 2}]
    assert same(value, value)


def test_encode_trusted_matches_encode() -> None:
    value = {"a": [1, 2.5, 2**80, "\x00"]}
    assert encode_trusted(value) == encode(value)
    assert orjson.loads(encode({"a": 1})) == {"a": 1}
