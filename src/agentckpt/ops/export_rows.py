"""The lines of an export file, column by column, and the checks an import makes on them.

Every line type of the export format (:mod:`agentckpt.ops.exchange`) is described here
once: its queries, its columns with the JSON form each takes in the file, and whether a
column may be null. The import validates every field of every line with these
descriptions before it writes anything of a run, so a bad file is refused with an
:class:`~agentckpt.errors.ExportFormatError` naming the file line and the field, never
with a database error halfway through a run.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

import zstandard

from agentckpt._core.codec import decode
from agentckpt._core.metadata import encode_metadata
from agentckpt.crypto.sealed import is_sealed
from agentckpt.crypto.sealing import SEALED, is_sealed_codec
from agentckpt.errors import CorruptDataError, InvalidValueError
from agentckpt.ops import queries

__all__ = ["CHILDREN", "RUN", "Column", "LineType", "Problem", "check_row", "describe"]

# How a column's value is written in the file (and read back).
Form = Literal["plain", "bytes", "hex", "time", "uuid", "object"]

_INT32 = 2**31 - 1
_INT64 = 2**63 - 1
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

# Payload codecs by table: the store's (json, json+zstd) and the blob and framework ones.
STATE_CODECS = ("json", "json+zstd")
RAW_CODECS = ("none", "zstd")
# An encrypted store's rows (agentckpt.crypto): checked once opened, by the import.
SEALED_STATE_CODECS = (*STATE_CODECS, *(c + SEALED for c in STATE_CODECS))
SEALED_BLOB_CODECS = (*RAW_CODECS, *(c + SEALED for c in RAW_CODECS))


class Problem(Exception):
    """What is wrong with one value; ``field`` names its column once it is known."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        self.reason = reason
        self.field = field
        super().__init__(f'field "{field}": {reason}' if field else reason)


def describe(value: Any) -> str:
    """A short description of a JSON value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 24 else text[:21] + '...'}"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=True)
        return f"the string {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, list):
        return "a list"
    return "an object"


# -- field checks: each returns the value to write, or raises Problem ------------------


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Problem(f"not a string (got {describe(value)})")
    if "\x00" in value:
        raise Problem("contains U+0000, which the database cannot store in text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Problem("contains a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value


def _integer(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if type(value) is not int:
            raise Problem(f"not an integer (got {describe(value)})")
        if not low <= value <= high:
            raise Problem(f"{value} is out of range ({low} to {high})")
        return value

    return check


_COUNT32 = _integer(0, _INT32)
_COUNT64 = _integer(0, _INT64)
_INT32_ANY = _integer(-_INT32 - 1, _INT32)


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise Problem(f"not true or false (got {describe(value)})")
    return value


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            names = ", ".join(f'"{a}"' for a in allowed)
            raise Problem(f"not one of {names} (got {describe(value)})")
        return value

    return check


def _time(value: Any) -> str:
    if not isinstance(value, str):
        raise Problem(f"not an ISO 8601 time (got {describe(value)})")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise Problem(f"not an ISO 8601 time (got {describe(value)})") from None
    if when.tzinfo is None:
        raise Problem(f"an ISO 8601 time without a UTC offset (got {describe(value)})")
    try:
        # One spelling for both databases: UTC, microseconds, as the export writes it.
        return when.astimezone(UTC).isoformat()
    except OverflowError:
        raise Problem(f"a time out of range (got {describe(value)})") from None


def _uuid(value: Any) -> str:
    if not isinstance(value, str):
        raise Problem(f"not a UUID (got {describe(value)})")
    try:
        return str(UUID(value))
    except ValueError:
        raise Problem(f"not a UUID (got {describe(value)})") from None


def _base64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise Problem(f"not a base64 string (got {describe(value)})")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise Problem("not valid base64") from None


def _checksum(value: Any) -> bytes:
    if not isinstance(value, str) or not _HEX64.match(value):
        raise Problem(f"not a sha256 in lowercase hex, 64 digits (got {describe(value)})")
    return bytes.fromhex(value)


def _digest(value: Any) -> str:
    if not isinstance(value, str) or not _HEX64.match(value):
        raise Problem(f"not a sha256 in lowercase hex, 64 digits (got {describe(value)})")
    return value


def check_config(value: Any) -> bytes:
    data = _base64(value)
    if is_sealed(data):
        return data  # checked by the import once opened
    try:
        document = decode(data)
    except CorruptDataError:
        raise Problem("the base64 bytes are not an exact JSON document") from None
    if not isinstance(document, dict):
        raise Problem(f"the base64 bytes hold {describe(document)}, not a JSON object")
    return data


def _metadata(value: Any) -> str | None:
    if not isinstance(value, dict):
        raise Problem(f"not a JSON object (got {describe(value)})")
    try:
        return encode_metadata(value)
    except InvalidValueError as exc:
        raise Problem(str(exc)) from None


def _json_text(value: Any) -> str:
    text = _text(value)
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise Problem(f"not JSON text ({_reason(exc)})") from None
    return text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a line's ``row``: its check, how it is written, whether it may be null."""

    name: str
    check: Callable[[Any], Any]
    form: Form = "plain"
    nullable: bool = False


def _col(
    name: str, check: Callable[[Any], Any], form: Form = "plain", *, null: bool = False
) -> Column:
    return Column(name, check, form, null)


@dataclass(frozen=True, slots=True)
class LineType:
    """A line type: the table it holds rows of, its columns, and its primary key in a run."""

    name: str
    export_query: str
    import_query: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    # Checks across the fields of one row (a payload against its codec).
    row_check: Callable[[dict[str, Any]], None] | None = None

    @property
    def column_names(self) -> tuple[str, ...]:
        """The columns in file order."""
        return tuple(c.name for c in self.columns)


def check_state_payload(row: dict[str, Any]) -> None:
    """A payload in the store's codecs that holds an exact JSON document."""
    if is_sealed_codec(row["codec"]):
        return  # checked by the import once opened
    raw = row["payload"]
    if row["codec"] == "json+zstd":
        try:
            raw = zstandard.decompress(raw)
        except zstandard.ZstdError as exc:
            raise Problem(f"zstd data does not decompress: {exc}", "payload") from None
    try:
        decode(raw)
    except CorruptDataError as exc:
        raise Problem(str(exc), "payload") from None


def _raw_payload(row: dict[str, Any]) -> None:
    """A framework payload (zstd or not) that decompresses."""
    if row["codec"] == "zstd":
        try:
            zstandard.decompress(row["payload"])
        except zstandard.ZstdError as exc:
            raise Problem(f"zstd data does not decompress: {exc}", "payload") from None


RUN = LineType(
    "run",
    queries.EXPORT_RUN,
    queries.IMPORT_RUN,
    (
        _col("kind", _text),
        _col("agent_id", _text),
        _col("status", _text),
        _col("head_step", _COUNT64, null=True),
        _col("head_version", _COUNT32),
        _col("head_open", _boolean),
        _col("snapshot_step", _COUNT64, null=True),
        _col("chain_bytes", _COUNT64),
        _col("lease_owner", _text, null=True),
        _col("lease_expires_at", _time, "time", null=True),
        _col("lease_epoch", _COUNT64),
        _col("heartbeat_at", _time, "time"),
        _col("created_at", _time, "time"),
        _col("updated_at", _time, "time"),
        _col("parent_run_id", _uuid, "uuid", null=True),
        _col("parent_step", _COUNT64, null=True),
        _col("config", check_config, "bytes"),
        _col("metadata", _metadata, "object"),
        _col("error", _text, null=True),
    ),
    key=(),
)

CHILDREN: tuple[LineType, ...] = (
    LineType(
        "step",
        queries.EXPORT_STEPS,
        queries.IMPORT_STEP,
        (
            _col("step", _COUNT64),
            _col("parent_step", _COUNT64, null=True),
            _col("kind", _choice("snapshot", "delta")),
            _col("is_open", _boolean),
            _col("codec", _choice(*SEALED_STATE_CODECS)),
            _col("payload", _base64, "bytes"),
            _col("state_version", _INT32_ANY),
            _col("write_version", _integer(1, _INT32)),
            _col("raw_bytes", _COUNT32),
            _col("state_bytes", _COUNT64),
            _col("checksum", _checksum, "hex"),
            _col("created_at", _time, "time"),
            _col("updated_at", _time, "time"),
        ),
        key=("step",),
    ),
    LineType(
        "blob",
        queries.EXPORT_BLOBS,
        queries.IMPORT_BLOB,
        (
            _col("digest", _digest),
            _col("codec", _choice(*SEALED_BLOB_CODECS)),
            _col("size", _COUNT64),
            _col("data", _base64, "bytes"),
            _col("created_at", _time, "time"),
        ),
        key=("digest",),
    ),
    LineType(
        "history",
        queries.EXPORT_HISTORY,
        queries.IMPORT_HISTORY,
        (
            _col("seq", _COUNT64),
            _col("step", _COUNT64),
            _col("item_count", _COUNT32),
            _col("codec", _choice(*SEALED_STATE_CODECS)),
            _col("payload", _base64, "bytes"),
            _col("raw_bytes", _COUNT32),
            _col("created_at", _time, "time"),
        ),
        key=("seq",),
        row_check=check_state_payload,
    ),
    LineType(
        "effect",
        queries.EXPORT_EFFECTS,
        queries.IMPORT_EFFECT,
        (
            _col("step", _COUNT64),
            _col("key", _text),
            _col("codec", _choice(*SEALED_STATE_CODECS)),
            _col("payload", _base64, "bytes"),
            _col("created_at", _time, "time"),
        ),
        key=("step", "key"),
        row_check=check_state_payload,
    ),
    LineType(
        "event",
        queries.EXPORT_EVENTS,
        queries.IMPORT_EVENT,
        (
            _col("event_id", _uuid, "uuid"),
            _col("step", _COUNT64, null=True),
            _col("kind", _text),
            _col("codec", _choice(*SEALED_STATE_CODECS)),
            _col("payload", _base64, "bytes"),
            _col("created_at", _time, "time"),
        ),
        key=("event_id",),
        row_check=check_state_payload,
    ),
    LineType(
        "thread",
        queries.EXPORT_THREADS,
        queries.IMPORT_THREAD,
        (_col("thread_id", _text), _col("namespace", _text)),
        key=(),  # one per run
    ),
    LineType(
        "step_index",
        queries.EXPORT_STEP_INDEX,
        queries.IMPORT_STEP_INDEX,
        (
            _col("checkpoint_id", _text),
            _col("step", _COUNT64),
            _col("parent_id", _text, null=True),
            _col("invocation_id", _text, null=True),
            _col("metadata", _json_text),
        ),
        key=("checkpoint_id",),
    ),
    LineType(
        "step_write",
        queries.EXPORT_STEP_WRITES,
        queries.IMPORT_STEP_WRITE,
        (
            _col("checkpoint_id", _text),
            _col("task_id", _text),
            # LangGraph numbers its special writes (errors, interrupts) below zero.
            _col("idx", _INT32_ANY),
            _col("channel", _text),
            _col("task_path", _text),
            _col("type", _text),
            _col("codec", _choice(*RAW_CODECS)),
            _col("payload", _base64, "bytes"),
        ),
        key=("checkpoint_id", "task_id", "idx"),
        row_check=_raw_payload,
    ),
)


def check_row(line_type: LineType, row: Any) -> dict[str, Any]:
    """The row's values as the import query takes them; :class:`Problem` names the field.

    Every column must be present and of its form, and no other key may be there: a
    field this version does not know would otherwise be dropped without a word.
    """
    if not isinstance(row, dict):
        raise Problem(f"not a JSON object (got {describe(row)})", "row")
    params: dict[str, Any] = {}
    for column in line_type.columns:
        if column.name not in row:
            raise Problem("missing", column.name)
        value = row[column.name]
        if value is None:
            if not column.nullable:
                raise Problem("null, but it must have a value", column.name)
            params[column.name] = None
            continue
        try:
            params[column.name] = column.check(value)
        except Problem as exc:
            raise Problem(exc.reason, column.name) from None
        except RecursionError:
            raise Problem("nested too deeply", column.name) from None
    unknown = sorted(set(row) - set(line_type.column_names))
    if unknown:
        raise Problem(f"not a field of a {line_type.name} line", unknown[0])
    if line_type.row_check is not None:
        try:
            line_type.row_check(params)
        except RecursionError:
            raise Problem("nested too deeply", "payload") from None
    return params
