"""The export format: runs as JSON Lines, recreated exactly by an import on any backend.

Each line is a JSON object with a ``type``; a run's lines also have its ``run_id`` and
the table row under ``row``. A file is a ``header`` line, then for each run one ``run``
line followed by the run's ``step``, ``blob``, ``history``, ``effect`` and ``event``
lines (and, for runs of a framework integration, ``thread``, ``step_index`` and
``step_write`` lines), then an ``end`` line that counts the runs, so a truncated file is
detected. Each step is exported as it is stored (snapshot or delta, codec, payload,
checksum), not re-encoded: the import writes back the very bytes, and the checksums
prove every state rebuilds exactly. Bytes are base64, checksums hex, times ISO 8601 in
UTC, metadata a JSON object with sorted keys, so an export of the same runs is
byte-for-byte the same from SQLite or PostgreSQL.

An import writes a run's rows first and its ``runs`` row last, so readers see the run
whole or not at all; rows left by an import that crashed are cleared when the same run
is imported again.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TextIO
from uuid import UUID

from agentckpt._core.blobs import decompress
from agentckpt._core.metadata import decode_metadata, encode_metadata
from agentckpt._core.writes import Row
from agentckpt._version import __version__
from agentckpt.errors import (
    ConflictError,
    ExportFormatError,
    RunNotFoundError,
    StoreError,
)
from agentckpt.ops import queries
from agentckpt.ops.views import kept_states
from agentckpt.store.store import Store, as_run_id

FORMAT = "agentckpt-export"
FORMAT_VERSION = 1

OnConflict = Literal["error", "skip", "replace"]

# Child tables: line type, export query, import query, the columns, which hold bytes.
_CHILDREN: tuple[tuple[str, str, str, tuple[str, ...], frozenset[str]], ...] = (
    (
        "step",
        queries.EXPORT_STEPS,
        queries.IMPORT_STEP,
        (
            "step",
            "parent_step",
            "kind",
            "is_open",
            "codec",
            "payload",
            "state_version",
            "write_version",
            "raw_bytes",
            "state_bytes",
            "checksum",
            "created_at",
            "updated_at",
        ),
        frozenset({"payload"}),
    ),
    (
        "blob",
        queries.EXPORT_BLOBS,
        queries.IMPORT_BLOB,
        ("digest", "codec", "size", "data", "created_at"),
        frozenset({"data"}),
    ),
    (
        "history",
        queries.EXPORT_HISTORY,
        queries.IMPORT_HISTORY,
        ("seq", "step", "item_count", "codec", "payload", "raw_bytes", "created_at"),
        frozenset({"payload"}),
    ),
    (
        "effect",
        queries.EXPORT_EFFECTS,
        queries.IMPORT_EFFECT,
        ("step", "key", "codec", "payload", "created_at"),
        frozenset({"payload"}),
    ),
    (
        "event",
        queries.EXPORT_EVENTS,
        queries.IMPORT_EVENT,
        ("event_id", "step", "kind", "codec", "payload", "created_at"),
        frozenset({"payload"}),
    ),
    (
        "thread",
        queries.EXPORT_THREADS,
        queries.IMPORT_THREAD,
        ("thread_id", "namespace"),
        frozenset(),
    ),
    (
        "step_index",
        queries.EXPORT_STEP_INDEX,
        queries.IMPORT_STEP_INDEX,
        ("checkpoint_id", "step", "parent_id", "invocation_id", "metadata"),
        frozenset(),
    ),
    (
        "step_write",
        queries.EXPORT_STEP_WRITES,
        queries.IMPORT_STEP_WRITE,
        ("checkpoint_id", "task_id", "idx", "channel", "task_path", "type", "codec", "payload"),
        frozenset({"payload"}),
    ),
)
_RUN_COLUMNS = (
    "run_id",
    "kind",
    "agent_id",
    "status",
    "head_step",
    "head_version",
    "head_open",
    "snapshot_step",
    "chain_bytes",
    "lease_owner",
    "lease_expires_at",
    "lease_epoch",
    "heartbeat_at",
    "created_at",
    "updated_at",
    "parent_run_id",
    "parent_step",
    "config",
    "metadata",
    "error",
)


def _out_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "checksum":
        return bytes(value).hex()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def _line(kind: str, run_id: UUID, row: Row, columns: Iterable[str]) -> str:
    values: dict[str, Any] = {}
    for name in columns:
        if kind == "run" and name == "metadata":
            values[name] = decode_metadata(row[name])
        elif name != "run_id":
            values[name] = _out_value(name, row[name])
    # The row's columns sit under "row", so a column named "type" cannot clash.
    record = {"type": kind, "run_id": str(run_id), "row": values}
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class ExportSummary:
    """What an export wrote."""

    runs: int = 0
    lines: int = 0


def export_runs(
    store: Store,
    run_ids: Iterable[UUID | str],
    out: TextIO,
    *,
    on_run: Callable[[UUID, int], None] | None = None,
) -> ExportSummary:
    """Write the runs to ``out`` as JSON Lines; ``on_run(run_id, lines)`` after each."""
    summary = ExportSummary()
    header = {
        "type": "header",
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "agentckpt": __version__,
        "dialect": store.backend.dialect,
    }
    out.write(json.dumps(header, sort_keys=True, separators=(",", ":")) + "\n")
    summary.lines += 1
    for raw_id in run_ids:
        rid = as_run_id(raw_id)
        rows = store.backend.read(queries.EXPORT_RUN, {"run_id": rid})
        if not rows:
            store.get_run(rid)  # raises RunNotFoundError with the usual message
        lines = [_line("run", rid, rows[0], _RUN_COLUMNS)]
        for kind, query, _, columns, _ in _CHILDREN:
            for row in store.backend.read(query, {"run_id": rid}):
                lines.append(_line(kind, rid, row, columns))
        out.write("\n".join(lines) + "\n")
        summary.runs += 1
        summary.lines += len(lines)
        if on_run:
            on_run(rid, len(lines))
    out.write(json.dumps({"runs": summary.runs, "type": "end"}, sort_keys=True) + "\n")
    summary.lines += 1
    return summary


@dataclass(slots=True)
class _Bundle:
    """One run read from a file, not yet written."""

    run: dict[str, Any]
    line: int
    children: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(slots=True)
class ImportSummary:
    """What an import did, run by run."""

    imported: list[UUID] = field(default_factory=list)
    skipped: list[UUID] = field(default_factory=list)
    replaced: list[UUID] = field(default_factory=list)


def _in_value(name: str, value: Any, byte_columns: frozenset[str]) -> Any:
    if value is None:
        return None
    if name == "checksum":
        return bytes.fromhex(value)
    if name in byte_columns:
        return base64.b64decode(value, validate=True)
    return value


def _read_bundles(lines: Iterable[str]) -> Iterator[_Bundle]:
    """Parse a file into runs, checking its structure line by line."""
    bundle: _Bundle | None = None
    count = 0
    ended = False
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if ended:
            raise ExportFormatError(f"line {number}: data after the end line")
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ExportFormatError(f"line {number}: not JSON ({exc})") from None
        kind = record.get("type") if isinstance(record, dict) else None
        if number == 1:
            if kind != "header" or record.get("format") != FORMAT:
                raise ExportFormatError("line 1: not an agentckpt export (no header line)")
            if record.get("format_version") != FORMAT_VERSION:
                raise ExportFormatError(
                    f"line 1: export format version {record.get('format_version')} is not "
                    f"{FORMAT_VERSION}; import it with the agentckpt version that wrote it"
                )
            continue
        if kind == "run":
            if bundle is not None:
                yield bundle
            bundle = _Bundle(run=record, line=number)
            count += 1
        elif kind == "end":
            if record.get("runs") != count:
                raise ExportFormatError(
                    f"line {number}: the end line counts {record.get('runs')} runs, "
                    f"the file holds {count}"
                )
            ended = True
        elif kind in {c[0] for c in _CHILDREN}:
            if bundle is None or record.get("run_id") != bundle.run.get("run_id"):
                raise ExportFormatError(f"line {number}: a {kind} line outside its run")
            bundle.children.setdefault(kind, []).append(record)
        else:
            raise ExportFormatError(f"line {number}: unknown line type {kind!r}")
    if number == 0:
        raise ExportFormatError("the file is empty: not an agentckpt export")
    if not ended:
        raise ExportFormatError(
            f"the file ends at line {number} without its end line: it is truncated; "
            "runs before the last one were imported, the last one was not"
        )
    if bundle is not None:
        yield bundle


def _params(
    rid: UUID, record: dict[str, Any], columns: tuple[str, ...], byte_columns: frozenset[str]
) -> dict[str, Any]:
    row = record.get("row")
    if not isinstance(row, dict):
        raise ExportFormatError(f"run {rid}: a {record.get('type')} line has no row object")
    try:
        params = {
            name: _in_value(name, row[name], byte_columns) for name in columns if name != "run_id"
        }
    except KeyError as exc:
        raise ExportFormatError(f"run {rid}: a {record.get('type')} line lacks {exc}") from None
    except ValueError as exc:
        raise ExportFormatError(f"run {rid}: bad {record.get('type')} line: {exc}") from None
    params["run_id"] = rid
    return params


def _check(rid: UUID, bundle: _Bundle, children: dict[str, list[dict[str, Any]]]) -> None:
    """Refuse a run whose states or blobs do not verify, before writing anything."""
    steps = children.get("step", [])
    for _ in kept_states(rid, steps):
        pass
    head = bundle.run.get("row", {}).get("head_step")
    if steps and steps[-1]["step"] != head:
        raise ExportFormatError(
            f"line {bundle.line}: run {rid} has head step {head} "
            f"but its last step line is step {steps[-1]['step']}"
        )
    for blob in children.get("blob", []):
        decompress(blob["codec"], blob["data"], digest=blob["digest"], where=f"run {rid}")


def import_runs(
    store: Store,
    lines: Iterable[str],
    *,
    on_conflict: OnConflict = "error",
    on_run: Callable[[UUID, str], None] | None = None,
) -> ImportSummary:
    """Recreate the runs of an export file in ``store``.

    A run that already exists is an error (``on_conflict="error"``, nothing of it is
    written), left as it is (``"skip"``) or deleted and imported again (``"replace"``).
    ``on_run(run_id, outcome)`` is called after each run.
    """
    summary = ImportSummary()
    for bundle in _read_bundles(lines):
        try:
            rid = as_run_id(bundle.run["run_id"])
        except KeyError:
            raise ExportFormatError(f"line {bundle.line}: run line without run_id") from None
        children = {
            kind: [_params(rid, rec, cols, blobs) for rec in bundle.children.get(kind, [])]
            for kind, _, _, cols, blobs in _CHILDREN
        }
        _check(rid, bundle, children)
        outcome = "imported"
        if _exists(store, rid):
            if on_conflict == "skip":
                summary.skipped.append(rid)
                if on_run:
                    on_run(rid, "skipped")
                continue
            if on_conflict == "error":
                raise ConflictError(
                    f"run {rid} already exists in the target store; nothing of it was "
                    "imported (use --on-conflict skip or --on-conflict replace)"
                )
            outcome = "replaced"
        store.delete_run(rid)
        run = _params(rid, bundle.run, _RUN_COLUMNS, frozenset({"config"}))
        run["metadata"] = encode_metadata(bundle.run["row"].get("metadata") or {})
        # One transaction: the run appears whole or not at all. Its row goes first, as
        # the rows integrations keep for it reference it.
        writes: list[tuple[str, list[dict[str, Any]]]] = [(queries.IMPORT_RUN, [run])]
        writes += [(query, children[kind]) for kind, _, query, _, _ in _CHILDREN]
        try:
            store.backend.write_all(writes)
        except StoreError:
            if _exists(store, rid):
                raise ConflictError(
                    f"run {rid} was created by someone else during the import; nothing of "
                    "it was imported"
                ) from None
            raise
        (summary.replaced if outcome == "replaced" else summary.imported).append(rid)
        if on_run:
            on_run(rid, outcome)
    return summary


def _exists(store: Store, run_id: UUID) -> bool:
    try:
        store.get_run(run_id)
    except RunNotFoundError:
        return False
    return True
