"""Exact JSON codec: what is stored is what comes back, bit for bit.

Stored documents are UTF-8 JSON. A value survives ``decode(encode(v))`` unchanged in every
respect :func:`same` checks: key order, ``1`` versus ``1.0`` versus ``True``, ``-0.0``,
integers of any size, U+0000 and astral characters. Values that JSON cannot carry exactly
(NaN, lone surrogates, tuples, datetimes, ...) are refused by :func:`validate` with the JSON
Pointer of the offending value, before anything reaches a database.

orjson does the work when it can; the stdlib :mod:`json` module covers what orjson cannot do
exactly (integers outside 64 bits, very deep nesting).
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from math import copysign, isfinite
from typing import Any

import orjson

from agentckpt.errors import ConfigurationError, CorruptDataError, InvalidValueError

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_SUPPORTED_BYTES",
    "Limits",
    "decode",
    "decode_unguarded",
    "encode",
    "encode_trusted",
    "exact_encoding",
    "same",
    "valid_container",
    "validate",
]

# The stdlib decoder's C scanner spends one interpreter recursion level per nesting level,
# and the default recursion limit is 1000; documents deeper than this could be written but
# never read back.
_MAX_SUPPORTED_DEPTH = 900

# The largest Limits.max_bytes. PostgreSQL holds at most 1 GiB in one field and in one
# protocol message (a bigger bytea drops the connection: "invalid message length"), and
# sends a bytea read in text format as hex, twice its size, so a value over about
# 512 MiB could be written but not read back by a text-format query; SQLite's default
# SQLITE_MAX_LENGTH is 1,000,000,000 bytes for a value and for a whole row. 256 MiB
# leaves room for either, for the row's other columns, for what compression and
# encryption add to an incompressible value, and for a state and a blob of this size
# in one commit.
MAX_SUPPORTED_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on the documents agentckpt agrees to store.

    ``max_depth`` is the deepest allowed nesting of containers (the root container is level
    1). psycopg's JSON loading and the stdlib ``json`` module hit Python's recursion limit
    near 995 levels, and orjson refuses to encode past 254 (it then falls back to the
    slower stdlib encoder); 200 keeps every document on the fast path and leaves headroom
    for the few levels a delta op adds around a value (``[{"value": ...}]``).

    ``max_bytes`` bounds one encoded document, so a runaway state fails loudly at commit
    time instead of producing a row the database or a reader chokes on. The run loop and
    the conversation API apply it to each value they move to a blob too (its raw bytes).
    At most :data:`MAX_SUPPORTED_BYTES` (256 MiB): past that the backends cannot be
    relied on to store and read the value back (PostgreSQL drops the connection for a
    value over 1 GiB).
    """

    max_depth: int = 200
    max_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        if type(self.max_depth) is not int or not 1 <= self.max_depth <= _MAX_SUPPORTED_DEPTH:
            raise ConfigurationError(
                f"Limits.max_depth must be an int from 1 to {_MAX_SUPPORTED_DEPTH}, "
                f"got {self.max_depth!r}"
            )
        if type(self.max_bytes) is not int or not 1 <= self.max_bytes <= MAX_SUPPORTED_BYTES:
            raise ConfigurationError(
                f"Limits.max_bytes must be an int from 1 to {MAX_SUPPORTED_BYTES} "
                f"(MAX_SUPPORTED_BYTES, 256 MiB), got {self.max_bytes!r}"
            )


DEFAULT_LIMITS = Limits()

# Integers inside this range are encoded by orjson; outside it orjson raises (encode) or
# silently turns them into floats (decode), so they take the stdlib path.
_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1

# orjson.loads turns integers outside [-2**63, 2**64) into floats without a word. Any such
# integer is written with at least 19 digits in a row, and our encoder never writes 19
# consecutive digits for a float (repr switches to exponent notation past 16 digits), so a
# run of 19 digits anywhere (even inside a string: a false alarm only costs speed) sends
# the document to the exact stdlib decoder. The run is found by mapping every digit to "9"
# and searching for nineteen of them: about 10x faster than a regex over the document.
_DIGITS_TO_NINE = bytes.maketrans(b"0123456789", b"9999999999")
_NINETEEN_NINES = b"9" * 19

# A \uD800-\uDFFF escape in the text; the stdlib decoder would turn an unpaired one into a
# lone surrogate instead of refusing it as orjson does.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# Without these options orjson would quietly serialize str/int/dict/list subclasses,
# datetimes and dataclasses; with them they raise, so nothing is silently converted.
ORJSON_STRICT = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)

_HINTS: dict[str, str] = {
    "tuple": "convert it to a list",
    "set": "convert it to a (sorted) list",
    "frozenset": "convert it to a (sorted) list",
    "bytes": "store it as text, e.g. base64",
    "bytearray": "store it as text, e.g. base64",
    "memoryview": "store it as text, e.g. base64",
    "datetime.datetime": "store an ISO 8601 string",
    "datetime.date": "store an ISO 8601 string",
    "datetime.time": "store an ISO 8601 string",
    "uuid.UUID": "store str(value)",
    "decimal.Decimal": "store str(value) to keep every digit",
}


def _type_name(value: object) -> str:
    cls = type(value)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _lone_surrogate(text: str) -> str | None:
    """Describe the first lone surrogate in ``text``, or return None if it is valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"lone surrogate U+{ord(text[exc.start]):04X} at index {exc.start}"
    return None


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _scalar_problem(value: object) -> str | None:
    """Say why a non-container value cannot be stored exactly, or return None if it can."""
    cls = type(value)
    if value is None or cls is bool:
        return None
    if cls is str:
        assert isinstance(value, str)
        where = _lone_surrogate(value)
        return None if where is None else f"string contains a {where}; it is not valid UTF-8"
    if cls is int:
        assert isinstance(value, int)
        try:
            # The stdlib encoder and decoder both respect sys.get_int_max_str_digits();
            # refusing here beats writing a document nobody can read back.
            str(value)
        except ValueError:
            return (
                f"integer has more than {sys.get_int_max_str_digits()} decimal digits "
                "(see sys.set_int_max_str_digits)"
            )
        return None
    if cls is float:
        assert isinstance(value, float)
        if isfinite(value):
            return None
        return f"float {value!r} is not valid JSON (NaN and infinities cannot be stored)"
    name = _type_name(value)
    for base in (int, float, str, dict, list):
        if isinstance(value, base):
            return (
                f"{name} is a subclass of {base.__name__}; only exact {base.__name__} values "
                f"round-trip (convert it with {base.__name__}(...))"
            )
    hint = _HINTS.get(name)
    suffix = f"; {hint}" if hint else ""
    return f"{name} is not a JSON type (use dict, list, str, int, float, bool or None){suffix}"


def _key_problem(key: object) -> str:
    if type(key) is not str:
        return (
            f"dict key {_short_repr(key)} has type {_type_name(key)}, not str; "
            "JSON object keys must be exact str"
        )
    where = _lone_surrogate(key)
    return f"dict key {_short_repr(key)} contains a {where}; it is not valid UTF-8"


def _pointer(prefix: str, segments: list[Any]) -> str:
    """Build the RFC 6901 JSON Pointer of ``segments`` below ``prefix``."""
    parts = [prefix]
    for seg in segments:
        if type(seg) is str:
            parts.append("/" + seg.replace("~", "~0").replace("/", "~1"))
        else:
            parts.append(f"/{seg}")
    return "".join(parts)


def validate(value: object, *, limits: Limits = DEFAULT_LIMITS, path: str = "") -> None:
    """Check that ``value`` can be stored and read back exactly; raise if not.

    Accepted: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``,
    ``bool`` and ``None``, nested at most ``limits.max_depth`` containers deep. Anything else,
    including subclasses such as ``IntEnum`` or ``str`` subclasses, is refused.

    Raises:
        InvalidValueError: ``.path`` is the JSON Pointer of the first offending value
            (below ``path``), ``.reason`` says what is wrong with it. For a bad dict key,
            the path is that of the dict.
    """
    cls = type(value)
    if cls is not dict and cls is not list:
        reason = _scalar_problem(value)
        if reason is not None:
            raise InvalidValueError(path, reason)
        return
    _walk(value, limits.max_depth, path)


def valid_container(value: dict[str, Any] | list[Any], max_depth: int) -> bool:
    """Whether the dict or list ``value`` passes :func:`validate` with containers nested
    at most ``max_depth`` deep (it counting as the first); no error, no path: for a
    caller that sends what fails through :func:`validate` to name it."""
    if max_depth < 1:
        return False
    try:
        _walk(value, max_depth, "")
    except InvalidValueError:
        return False
    return True


# The exact types of an accepted value: anything else (a subclass, a tuple, an enum, a
# UUID, an orjson.Fragment) is refused by validate.
_JSON_TYPES = frozenset({str, int, float, bool, type(None), dict, list})
_NONE = type(None)


def exact_encoding(value: Any, max_depth: int, data: bytes | None = None) -> bytes | None:
    """orjson's strict encoding of the container ``value`` if it certainly passes
    :func:`validate` with ``max_depth``, else None (then only the walk can tell, and
    name what is wrong). ``data``: that encoding, if the caller has it.

    A fast path at C speed where the walk costs a Python step per value (a 55 KB table
    of numbers: 0.23 against 0.84 ms, the encoding included). The strict encoding
    refuses lone surrogates, integers beyond 64 bits, subclasses of str, int, float,
    dict and list, keys that are not exact str, unknown types and cycles. What it writes
    anyway is caught here, one nesting level at a time (``gc.get_referents`` lists a
    level's children, in C): a type outside the JSON ones (tuples, enums, UUIDs,
    fragments), a level past ``max_depth``, and NaN or an infinity, which orjson writes
    as ``null``: with a float anywhere, the ``null`` in the bytes must be as many as the
    None values (a ``null`` inside a string is a false alarm, which only costs the walk).
    """
    if data is None:
        try:
            data = orjson.dumps(value, None, ORJSON_STRICT)
        except TypeError:
            return None
    level: list[Any] = [value]
    depth = 0
    nones = 0
    floats = False
    while True:
        kinds = set(map(type, level))
        if not kinds <= _JSON_TYPES:
            return None
        if _NONE in kinds:
            # Safe: every item is of a JSON type, so == None is a C comparison.
            nones += level.count(None)
        if float in kinds:
            floats = True
        if dict not in kinds and list not in kinds:
            break  # only scalars: no level below
        depth += 1
        if depth > max_depth:
            return None
        # The children of the level's dicts (values; keys are exact str, checked by
        # orjson) and lists; scalars have none.
        level = gc.get_referents(*level)
    if floats and data.count(b"null") != nones:
        return None
    return data


def _children(container: Any) -> Iterator[tuple[Any, Any]]:
    if type(container) is dict:
        return iter(container.items())
    return enumerate(container)


def _walk(root: Any, max_depth: int, prefix: str) -> None:
    # Iterative on purpose: states can be deep, and a RecursionError here would be both
    # unhelpful and slow. Paths are only built when something is wrong.
    stack: list[Iterator[tuple[Any, Any]]] = [_children(root)]
    is_dict: list[bool] = [type(root) is dict]
    segments: list[Any] = []  # the key/index of each stacked container below the root
    while stack:
        in_dict = is_dict[-1]
        for key, item in stack[-1]:
            if in_dict and (
                type(key) is not str or not (key.isascii() or _lone_surrogate(key) is None)
            ):
                raise InvalidValueError(_pointer(prefix, segments), _key_problem(key))
            cls = type(item)
            if cls is str:
                if item.isascii():
                    continue
            elif cls is int:
                if _I64_MIN <= item <= _U64_MAX:
                    continue
            elif cls is float:
                if isfinite(item):
                    continue
            elif cls is dict or cls is list:
                if len(stack) >= max_depth:
                    raise InvalidValueError(
                        _pointer(prefix, [*segments, key]),
                        f"nesting is deeper than the limit of {max_depth} levels "
                        "(Limits.max_depth); a reference cycle also causes this",
                    )
                stack.append(_children(item))
                is_dict.append(cls is dict)
                segments.append(key)
                break
            elif item is None or cls is bool:
                continue
            # Slow path: non-ASCII strings, big integers and refusals.
            reason = _scalar_problem(item)
            if reason is not None:
                raise InvalidValueError(_pointer(prefix, [*segments, key]), reason)
        else:
            stack.pop()
            is_dict.pop()
            if segments:
                segments.pop()


def encode(value: object, *, limits: Limits = DEFAULT_LIMITS, fast: bytes | None = None) -> bytes:
    """Validate ``value`` and return it as compact UTF-8 JSON that :func:`decode` restores.

    ``fast``: :func:`encode_fast`'s encoding of ``value``, for a caller that has it
    already (it is then not encoded again).

    Raises:
        InvalidValueError: the value cannot be stored exactly (see :func:`validate`), or its
            encoding is larger than ``limits.max_bytes`` (path ``""``).
    """
    cls = type(value)
    data = None
    if cls is dict or cls is list:
        data = exact_encoding(value, limits.max_depth, fast)
    if data is None:
        validate(value, limits=limits)
        data = encode_trusted(value)
    if len(data) > limits.max_bytes:
        raise InvalidValueError(
            "",
            f"encoded document is {len(data)} bytes, over the limit of {limits.max_bytes} "
            "bytes (Limits.max_bytes)",
        )
    return data


def encode_trusted(value: object) -> bytes:
    """Encode a value already known to be valid, without validating or size-checking it.

    For agentckpt's own use on values that passed :func:`validate` (or were produced by
    :func:`decode`), e.g. to measure the size of a delta.
    """
    fast = encode_fast(value)
    if fast is not None:
        return fast
    # orjson refuses integers outside 64 bits and nesting past 254 levels; the stdlib
    # encoder handles both exactly (floats via repr, which round-trips).
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


def encode_fast(value: object) -> bytes | None:
    """orjson's encoding of a valid value, or None where :func:`encode_trusted` needs the
    stdlib encoder (whose floats read differently: ``6.1e-05`` for orjson's ``6.1e-5``),
    so bytes joined from pieces of both would not be the encoding of the whole."""
    try:
        return orjson.dumps(value, option=ORJSON_STRICT)
    except TypeError:
        return None


def decode(data: bytes | bytearray | memoryview) -> Any:
    """Return the value that :func:`encode` turned into ``data``.

    Raises:
        CorruptDataError: ``data`` is not valid UTF-8 JSON, or holds something :func:`encode`
            never writes (NaN, infinities, lone surrogates), or is too deep or has numbers
            too long for Python to read.
    """
    try:
        if _NINETEEN_NINES not in bytes(data).translate(_DIGITS_TO_NINE):
            return orjson.loads(data)
        return _decode_exact(data)
    except (ValueError, RecursionError) as exc:
        # orjson.JSONDecodeError and UnicodeError are ValueErrors; RecursionError comes from
        # the stdlib decoder on documents nested about 1000 deep.
        raise CorruptDataError(f"stored JSON document cannot be decoded: {exc}") from exc


def decode_unguarded(data: bytes | bytearray | memoryview) -> Any:
    """orjson's reading of ``data``, without :func:`decode`'s scan for integers beyond 64
    bits (which orjson reads as floats): for a caller that proves the result exact.

    The store does, by comparing the state rebuilt with it to its row's checksum: a
    checksum is of the exact encoding of the committed state, where an integer is
    digits, and orjson writes the float it would have read instead of such an integer
    with an exponent (``1.8446744073709552e+19``), so the checksums differ. On any
    mismatch it rebuilds with :func:`decode`, which decides.

    Raises:
        CorruptDataError: as :func:`decode`, for what orjson refuses.
    """
    try:
        return orjson.loads(data)
    except ValueError as exc:
        raise CorruptDataError(f"stored JSON document cannot be decoded: {exc}") from exc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not isfinite(value):
        raise ValueError(f"number {text[:40]} is out of float range")
    return value


def _decode_exact(data: bytes | bytearray | memoryview) -> Any:
    # Strict UTF-8 decoding refuses encoded surrogates; the stdlib parser keeps integers of
    # any size, and the hooks refuse what orjson would refuse.
    text = bytes(data).decode("utf-8")
    value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    # Python 3.11's parser stops near 1000 levels with RecursionError; 3.13's goes on.
    # Nothing agentckpt writes is that deep, so either way it is not a stored document.
    _check_depth(value, _MAX_SUPPORTED_DEPTH)
    if _SURROGATE_ESCAPE.search(data) is not None:
        # Paired surrogate escapes are fine; re-encoding raises UnicodeEncodeError (a
        # ValueError) only if the parser produced a lone one.
        encode_trusted(value)
    return value


def _check_depth(value: Any, limit: int) -> None:
    """Raise ValueError if containers nest deeper than ``limit``; iterative, no recursion."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if type(node) is dict else node if type(node) is list else ()
        for child in children:
            if type(child) is dict or type(child) is list:
                if depth + 1 > limit:
                    raise ValueError(f"document nests deeper than {limit} levels")
                stack.append((child, depth + 1))


def same(a: object, b: object) -> bool:
    """Strict structural equality of JSON values: true iff they encode identically.

    Unlike ``==``, tells apart ``1``, ``1.0`` and ``True``, ``0.0`` and ``-0.0``, and dicts
    whose keys are in a different order. Meant for JSON values; for other objects it is a
    best effort (orjson serializes enums by value, for instance).
    """
    if a is b:
        return True
    try:
        # == is a necessary condition and runs at C speed; most differing values stop here.
        if a != b:
            return False
    except RecursionError:
        # == recurses in C along the nesting; the walk below does not.
        return _same_walk(a, b)
    try:
        if type(a) is list and type(b) is list and len(a) > _SAME_CHUNK:
            return _same_chunks(a, b)
        return orjson.dumps(a, None, ORJSON_STRICT) == orjson.dumps(b, None, ORJSON_STRICT)
    except TypeError:
        return _same_walk(a, b)


# Items of two long lists (a conversation's history) encoded and compared this many at a
# time. Two whole encodings of hundreds of KB alive at once cost several times their
# encoding in fresh memory (a 1,000-message list of 570 KB: 0.55 ms against 0.19 ms by
# chunks); a chunk of typical messages stays far below that.
_SAME_CHUNK = 128


def _same_chunks(a: list[Any], b: list[Any]) -> bool:
    # a == b held, so the lengths are equal. An array's encoding is its items' encodings
    # joined by commas, and one encoding parses one way only: the whole encodings are
    # equal exactly when every pair of chunks encodes equally.
    dumps, step = orjson.dumps, _SAME_CHUNK
    for start in range(0, len(a), step):
        end = start + step
        if dumps(a[start:end], None, ORJSON_STRICT) != dumps(b[start:end], None, ORJSON_STRICT):
            return False
    return True


def _same_walk(a: object, b: object) -> bool:
    pending: list[tuple[Any, Any]] = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        cls = type(x)
        if cls is not type(y):
            return False
        if cls is dict:
            if len(x) != len(y) or list(x) != list(y):
                return False
            pending.extend(zip(x.values(), y.values(), strict=True))
        elif cls is list:
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif cls is float:
            if not (x == y and copysign(1.0, x) == copysign(1.0, y)):
                return False
        elif x != y:
            return False
    return True
