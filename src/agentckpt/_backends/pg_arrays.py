"""The group commit's array parameters, encoded once in PostgreSQL's binary array format.

``commit_steps`` takes one array per column of the batch. psycopg adapts a Python list
by inspecting its elements on every execute to pick an element type, in Python, which
cost more than all the rest of the client's work for a small commit. These arrays have
fixed element types, so they are encoded here directly and handed to psycopg as opaque
values with a dumper per type that returns the bytes as they are.

Binary array format (``array_recv``): ndim, has-null flag, element type OID, then per
dimension its length and lower bound, then each element as a 4-byte length (-1 for
NULL) and its binary representation.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from uuid import UUID

from psycopg import AsyncConnection, Connection
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEADER = struct.Struct(">iiIii")
_EMPTY = struct.Struct(">iiI")
_LENGTH = struct.Struct(">i")
_INT8 = struct.Struct(">iq")  # an int8 element: its length (8) and its value
_NULL = _LENGTH.pack(-1)
_TRUE = _LENGTH.pack(1) + b"\x01"
_FALSE = _LENGTH.pack(1) + b"\x00"

# Element and array type OIDs (pg_type), fixed since PostgreSQL's first releases.
_BOOL, _BOOL_ARRAY = 16, 1000
_BYTEA, _BYTEA_ARRAY = 17, 1001
_INT8_OID, _INT8_ARRAY = 20, 1016
_TEXT, _TEXT_ARRAY = 25, 1009
_UUID, _UUID_ARRAY = 2950, 2951


class PgArray:
    """A one-dimensional array already in binary form; see the subclasses."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Int8Array(PgArray):
    """``bigint[]``."""


class BoolArray(PgArray):
    """``boolean[]``."""


class ByteaArray(PgArray):
    """``bytea[]``."""


class TextArray(PgArray):
    """``text[]``."""


class UuidArray(PgArray):
    """``uuid[]``."""


def _array(element_oid: int, count: int, has_null: bool, elements: Iterable[bytes]) -> bytes:
    if count == 0:
        return _EMPTY.pack(0, 0, element_oid)
    return _HEADER.pack(1, has_null, element_oid, count, 1) + b"".join(elements)


def _sized(value: bytes) -> bytes:
    return _LENGTH.pack(len(value)) + value


def int8_array(values: list[int | None]) -> Int8Array:
    """``values`` as ``bigint[]``; each must fit in 64 bits."""
    return Int8Array(
        _array(
            _INT8_OID,
            len(values),
            None in values,
            (_NULL if v is None else _INT8.pack(8, v) for v in values),
        )
    )


def bool_array(values: list[bool]) -> BoolArray:
    """``values`` as ``boolean[]``."""
    return BoolArray(_array(_BOOL, len(values), False, (_TRUE if v else _FALSE for v in values)))


def bytea_array(values: list[bytes]) -> ByteaArray:
    """``values`` as ``bytea[]``."""
    return ByteaArray(_array(_BYTEA, len(values), False, (_sized(v) for v in values)))


def text_array(values: list[str | None]) -> TextArray:
    """``values`` as ``text[]`` (UTF-8, no NUL characters)."""
    return TextArray(
        _array(
            _TEXT,
            len(values),
            None in values,
            (_NULL if v is None else _sized(v.encode()) for v in values),
        )
    )


def uuid_array(values: list[UUID]) -> UuidArray:
    """``values`` as ``uuid[]``."""
    return UuidArray(_array(_UUID, len(values), False, (_sized(v.bytes) for v in values)))


def _dumper(array_oid: int) -> type[Dumper]:
    class _Encoded(Dumper):
        format = Format.BINARY
        oid = array_oid

        def dump(self, obj: PgArray) -> bytes:
            return obj.data

    return _Encoded


_DUMPERS: tuple[tuple[type[PgArray], type[Dumper]], ...] = (
    (Int8Array, _dumper(_INT8_ARRAY)),
    (BoolArray, _dumper(_BOOL_ARRAY)),
    (ByteaArray, _dumper(_BYTEA_ARRAY)),
    (TextArray, _dumper(_TEXT_ARRAY)),
    (UuidArray, _dumper(_UUID_ARRAY)),
)


def register_arrays(conn: AsyncConnection[object] | Connection[object]) -> None:
    """Teach ``conn`` to send the arrays of this module."""
    for cls, dumper in _DUMPERS:
        conn.adapters.register_dumper(cls, dumper)


__all__ = [
    "BoolArray",
    "ByteaArray",
    "Int8Array",
    "PgArray",
    "TextArray",
    "UuidArray",
    "bool_array",
    "bytea_array",
    "int8_array",
    "register_arrays",
    "text_array",
    "uuid_array",
]
