"""The fast validation path (orjson plus a C-speed census) accepts exactly what the walk
accepts: never a value the walk refuses, and the same error when it hands over."""

from __future__ import annotations

import enum
import math
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentckpt._core import codec
from agentckpt._core.codec import Limits, encode, encode_fast, valid_container, validate
from agentckpt.errors import InvalidValueError


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


class Name(enum.StrEnum):
    ALICE = "alice"


class Ratio(float, enum.Enum):
    HALF = 0.5


class Flag(enum.IntFlag):
    ON = 1


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


class Listy(list[Any]):
    pass


class Mapping(dict[str, Any]):
    pass


# Values the walk refuses that orjson writes anyway, or refuses itself.
_REFUSED = [
    (1, 2),
    (),
    uuid.UUID(int=7),
    Color.RED,
    Level.LOW,
    Name.ALICE,
    Ratio.HALF,
    Flag.ON,
    orjson.Fragment(b"1"),
    float("nan"),
    float("inf"),
    -float("inf"),
    Text("x"),
    Number(3),
    Real(1.5),
    Listy([1]),
    Mapping(a=1),
    "\ud800",
    "a\udfffb",
    {1, 2},
    b"bytes",
]
_SCALARS = [
    None,
    True,
    False,
    0,
    -0.0,
    1.5,
    2**63,
    -(2**63),
    2**64 - 1,
    2**64,
    -(2**63) - 1,
    10**40,
    "null",
    "nullable null",
    "é😀",
    "",
    "\x00",
]


def _bad_keys() -> Any:
    return st.sampled_from([1, None, (1,), Text("k"), Name.ALICE, "\ud800", 1.5])


def _values(allow_bad: bool) -> Any:
    floats = st.floats(allow_nan=allow_bad, allow_infinity=allow_bad)
    scalars = st.sampled_from(_SCALARS) | st.integers() | floats | st.text(max_size=8)
    if allow_bad:
        scalars = scalars | st.sampled_from(_REFUSED)
    keys = st.text(max_size=6) | st.sampled_from(["null", "a", "é"])
    if allow_bad:
        keys = keys | _bad_keys()

    def extend(children: Any) -> Any:
        containers = st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)
        if allow_bad:
            containers = containers | st.lists(children, max_size=3).map(tuple)
        return containers

    return st.recursive(scalars, extend, max_leaves=20)


def _deep(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _walk_accepts(value: Any, max_depth: int) -> bool:
    try:
        codec._walk(value, max_depth, "")
    except InvalidValueError:
        return False
    return True


def _walk_error(value: Any, max_depth: int) -> tuple[str, str] | None:
    try:
        codec._walk(value, max_depth, "")
    except InvalidValueError as exc:
        return exc.path, exc.reason
    return None


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.lists(_values(True), max_size=4), st.dictionaries(st.text(), _values(True))),
    st.integers(min_value=1, max_value=8),
)
def test_fast_path_accepts_only_what_the_walk_accepts(value: Any, max_depth: int) -> None:
    data = codec.exact_encoding(value, max_depth)
    if data is not None:
        assert _walk_accepts(value, max_depth)
        assert data == orjson.dumps(value, option=codec.ORJSON_STRICT)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(_values(False), max_size=4), st.dictionaries(st.text(), _values(False))))
def test_fast_path_accepts_valid_values_orjson_encodes(value: Any) -> None:
    # Its only false alarms: a "null" inside a string of a value that holds a float.
    if encode_fast(value) is None:
        return
    data = codec.exact_encoding(value, codec.DEFAULT_LIMITS.max_depth)
    text = orjson.dumps(value, option=codec.ORJSON_STRICT)
    has_float = b"." in text or b"e" in text
    if data is None:
        assert has_float
        assert b"null" in text
        assert _walk_accepts(value, codec.DEFAULT_LIMITS.max_depth)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(_values(True), st.lists(_values(True), max_size=4)),
    st.integers(min_value=1, max_value=8),
)
def test_validate_encode_and_valid_container_agree_with_the_walk(value: Any, depth: int) -> None:
    limits = Limits(max_depth=depth)
    container = type(value) in (dict, list)
    expected = _walk_error(value, depth) if container else None
    error: tuple[str, str] | None = None
    try:
        validate(value, limits=limits)
    except InvalidValueError as exc:
        error = (exc.path, exc.reason)
    if error is not None:
        if container:
            assert error == expected
        return
    assert expected is None
    data = encode(value, limits=limits)
    assert data == codec.encode_trusted(value)
    assert encode(value, limits=limits, fast=encode_fast(value)) == data
    if type(value) in (dict, list):
        assert valid_container(value, depth)


@pytest.mark.parametrize("bad", _REFUSED, ids=lambda v: f"{type(v).__name__}-{v!r:.12}")
@pytest.mark.parametrize("where", ["item", "value", "deep"])
def test_each_refused_type_is_refused_with_its_path(bad: Any, where: str) -> None:
    value: Any = {"item": [1, bad]} if where == "item" else {"a": {"b": bad}}
    if where == "deep":
        value = [[[[{"x": [None, 1.5, bad]}]]]]
    path = {"item": "/item/1", "value": "/a/b", "deep": "/0/0/0/0/x/2"}[where]
    assert codec.exact_encoding(value, 200) is None
    with pytest.raises(InvalidValueError) as info:
        validate(value)
    assert info.value.path == path
    with pytest.raises(InvalidValueError):
        encode(value, fast=encode_fast(value))
    assert not valid_container(value, 200)


@pytest.mark.parametrize("key", [1, None, Text("k"), Name.ALICE, "\ud800"], ids=repr)
def test_bad_keys_are_refused(key: Any) -> None:
    value = {"a": [{key: 1}]}
    assert codec.exact_encoding(value, 200) is None
    with pytest.raises(InvalidValueError) as info:
        validate(value)
    assert info.value.path == "/a/0"


@pytest.mark.parametrize("max_depth", [1, 2, 3, 50, 199, 200, 253, 254, 255, 300])
def test_depth_limit_is_exact(max_depth: int) -> None:
    for depth in (max_depth - 1, max_depth, max_depth + 1):
        if depth < 1 or depth > 800:
            continue
        for leaf in (1, [], {}, "s"):
            value = _deep(depth - (type(leaf) in (dict, list)), leaf)
            fast = codec.exact_encoding(value, max_depth)
            walk = _walk_accepts(value, max_depth)
            if fast is not None:
                assert walk
            # orjson's own limit is 254 levels: below it the census decides alone.
            if depth <= 254:
                assert (fast is not None) == walk == (depth <= max_depth)


def test_nan_next_to_none_and_null_text() -> None:
    assert codec.exact_encoding([None, 1.5, "null"], 200) is None  # a false alarm
    assert codec.exact_encoding([None, 1.5, None], 200) is not None
    assert codec.exact_encoding([None, math.nan, 1.5], 200) is None
    assert codec.exact_encoding([None, "null"], 200) is not None  # no float: no NaN
    with pytest.raises(InvalidValueError) as info:
        validate({"rows": [[1, None], [2.5, math.inf]]})
    assert info.value.path == "/rows/1/1"


def test_reference_cycle_goes_to_the_walk() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert codec.exact_encoding(cycle, 200) is None
    with pytest.raises(InvalidValueError, match="reference cycle"):
        validate(cycle)


def test_shared_subtrees_are_counted_like_the_walk() -> None:
    shared = {"n": None, "x": 1.0}
    value = [shared, shared, [shared]]
    assert codec.exact_encoding(value, 200) is not None
    assert codec.exact_encoding(value, 2) is None
    assert _walk_accepts(value, 3)
    assert not _walk_accepts(value, 2)
