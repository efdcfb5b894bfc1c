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

An import checks every field of every line of a run (:mod:`agentckpt.ops.export_rows`),
then the run as a whole (its chain of states against their checksums, its blobs against
their sha256, its head against its steps), before it writes anything of the run; then it
writes the run in one transaction, so readers see it whole or not at all. It is
all-or-nothing per run: a bad line stops the import with an :class:`ExportFormatError`
naming the file line and the field; the runs before it stay imported.
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
from agentckpt._core.metadata import decode_metadata
from agentckpt._core.plan import replay
from agentckpt._core.writes import Row
from agentckpt._version import __version__
from agentckpt.crypto.exchange import (
    data_key_from_line,
    data_key_line,
    open_line_row,
    open_run_row,
)
from agentckpt.crypto.sealing import Sealing
from agentckpt.errors import (
    ConfigurationError,
    ConflictError,
    CorruptDataError,
    ExportFormatError,
    RunNotFoundError,
    StoreError,
)
from agentckpt.ops.export_rows import (
    CHILDREN,
    RUN,
    Column,
    LineType,
    Problem,
    check_config,
    check_row,
    check_state_payload,
    describe,
)
from agentckpt.store.keys import KeyTable
from agentckpt.store.store import Store, as_run_id

FORMAT = "agentckpt-export"
FORMAT_VERSION = 1

OnConflict = Literal["error", "skip", "replace"]


def _out_value(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.form == "hex":
        return bytes(value).hex()
    if column.form == "object":
        return decode_metadata(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def _line(line_type: LineType, run_id: UUID, row: Row) -> str:
    values = {column.name: _out_value(column, row[column.name]) for column in line_type.columns}
    # The row's columns sit under "row", so a column named "type" cannot clash.
    record = {"type": line_type.name, "run_id": str(run_id), "row": values}
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
    decrypt: bool = False,
) -> ExportSummary:
    """Write the runs to ``out`` as JSON Lines; ``on_run(run_id, lines)`` after each.

    An encrypted store's values stay sealed, and its data keys (wrapped) go along as
    ``data_key`` lines after the header; ``decrypt=True`` writes them opened instead.
    """
    keys = KeyTable(store.backend).load()
    if decrypt and keys and not store.sealing.enabled:
        raise ConfigurationError(
            "exporting decrypted needs the store opened with its keys (encryption= in the "
            "URL or Store.connect); nothing was written"
        )
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
    for key in [] if decrypt else keys:
        record = {"type": "data_key", "row": data_key_line(key)}
        out.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
        summary.lines += 1
    opened = decrypt and store.sealing.enabled
    for raw_id in run_ids:
        rid = as_run_id(raw_id)
        rows = store.backend.read(RUN.export_query, {"run_id": rid})
        if not rows:
            store.get_run(rid)  # raises RunNotFoundError with the usual message
        lines = [_line(RUN, rid, open_run_row(store.sealing, rows[0]) if opened else rows[0])]
        for line_type in CHILDREN:
            for row in store.backend.read(line_type.export_query, {"run_id": rid}):
                if opened:
                    row = open_line_row(store.sealing, line_type.name, row, rid)
                lines.append(_line(line_type, rid, row))
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
    """One run read from a file and checked, not yet written: each row with its line."""

    run_id: UUID
    line: int
    run: dict[str, Any]
    children: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)


@dataclass(slots=True)
class ImportSummary:
    """What an import did, run by run."""

    imported: list[UUID] = field(default_factory=list)
    skipped: list[UUID] = field(default_factory=list)
    replaced: list[UUID] = field(default_factory=list)


_LINE_TYPES = {line_type.name: line_type for line_type in CHILDREN}
_RUN_LINE_KEYS = frozenset({"type", "run_id", "row"})


class _Reader:
    """Reads a file line by line into checked runs; every error names ``source`` line N."""

    def __init__(self, source: str, store: Store | None = None) -> None:
        self.source = source
        # The target store: data_key lines go into its keyring, and sealed values are
        # checked once opened with it.
        self.store = store
        self.sealing = store.sealing if store is not None else Sealing()

    def error(
        self, number: int | None, reason: str, field: str | None = None, kind: str | None = None
    ) -> ExportFormatError:
        where = self.source if number is None else f"{self.source} line {number}"
        if kind is not None:
            where += f" ({kind} line)"
        text = f'{where}: field "{field}": {reason}' if field else f"{where}: {reason}"
        return ExportFormatError(text, line=number, field=field)

    def text(self, number: int, raw: str | bytes) -> str:
        if isinstance(raw, str):
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(
                number,
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            ) from None

    def record(self, number: int, text: str) -> dict[str, Any]:
        try:
            record = json.loads(
                text,
                parse_constant=_refuse_constant,
                parse_float=_exact_float,
                object_pairs_hook=_unique_keys,
            )
        except RecursionError:
            raise self.error(number, "not JSON (nested too deeply)") from None
        except _Inexact as exc:
            raise self.error(number, f"cannot be imported exactly: {exc}") from None
        except ValueError as exc:
            raise self.error(number, f"not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise self.error(number, f"not a JSON object (got {describe(record)})")
        return record

    def row(self, number: int, line_type: LineType, record: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(record) - _RUN_LINE_KEYS)
        if unknown:
            raise self.error(number, "not a key of the line", unknown[0], line_type.name)
        if "row" not in record:
            raise self.error(number, "missing", "row", line_type.name)
        try:
            return check_row(line_type, record["row"])
        except Problem as exc:
            raise self.error(number, exc.reason, exc.field, line_type.name) from None

    def run_id(self, number: int, record: dict[str, Any]) -> UUID:
        value = record.get("run_id")
        if not isinstance(value, str):
            raise self.error(number, f"not a run id (got {describe(value)})", "run_id")
        try:
            return UUID(value)
        except ValueError:
            raise self.error(number, f"not a UUID (got {describe(value)})", "run_id") from None

    def bundles(self, lines: Iterable[str | bytes]) -> Iterator[_Bundle]:
        """Parse a file into runs, checking each line completely as it is read, and each
        run as a whole once its last line is read."""
        bundle: _Bundle | None = None
        count = 0
        ended = False
        number = 0
        for number, raw in enumerate(lines, start=1):
            text = self.text(number, raw)
            if not text.strip():
                continue
            if ended:
                raise self.error(number, "data after the end line")
            record = self.record(number, text)
            kind = record.get("type")
            if number == 1:
                self.header(record)
                continue
            if kind == "run":
                if bundle is not None:
                    self.check(bundle)
                    yield bundle
                bundle = _Bundle(
                    run_id=self.run_id(number, record),
                    line=number,
                    run=self.row(number, RUN, record),
                )
                count += 1
            elif kind == "data_key" and bundle is None:
                self.data_key(number, record)
            elif kind == "end":
                runs = record.get("runs")
                if type(runs) is not int or runs != count:
                    raise self.error(
                        number, f"the end line counts {describe(runs)} runs, the file holds {count}"
                    )
                ended = True
            elif isinstance(kind, str) and kind in _LINE_TYPES:
                if bundle is None or self.run_id(number, record) != bundle.run_id:
                    raise self.error(number, f"a {kind} line outside its run")
                params = self.row(number, _LINE_TYPES[kind], record)
                bundle.children.setdefault(kind, []).append((number, params))
            else:
                raise self.error(number, f"unknown line type {describe(kind)}", "type")
        if number == 0:
            raise self.error(None, "the file is empty: not an agentckpt export")
        if not ended:
            raise self.error(
                None, f"the file ends at line {number} without its end line: it is truncated"
            )
        if bundle is not None:
            self.check(bundle)
            yield bundle

    def header(self, record: dict[str, Any]) -> None:
        if record.get("type") != "header" or record.get("format") != FORMAT:
            raise self.error(1, "not an agentckpt export (no header line)")
        if record.get("format_version") != FORMAT_VERSION:
            raise self.error(
                1,
                f"export format version {record.get('format_version')} is not "
                f"{FORMAT_VERSION}; import it with the agentckpt version that wrote it",
            )

    def data_key(self, number: int, record: dict[str, Any]) -> None:
        """A data key of the exporting store: added to the target's ``data_keys`` (its
        wrapped form; the target's key provider must hold the KEK to read the runs)."""
        try:
            key = data_key_from_line(record.get("row"))
        except ValueError as exc:
            raise self.error(number, str(exc), "row", "data_key") from None
        # Only a store opened with encryption takes them: a clear store that did would
        # refuse clear writes from then on; its import of sealed runs fails anyway.
        if self.store is not None and self.sealing.keyring is not None:
            KeyTable(self.store.backend).insert(key)
            KeyTable(self.store.backend).refresh(self.sealing.keyring)

    def opened(self, bundle: _Bundle) -> _Bundle:
        """The bundle with its sealed values opened, checked as a clear one would be."""
        children: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for name, rows in bundle.children.items():
            children[name] = []
            for number, row in rows:
                clear = open_line_row(self.sealing, name, row, bundle.run_id)
                if clear is not row and name != "blob":
                    try:
                        check_state_payload(clear)
                    except Problem as exc:
                        raise self.error(number, exc.reason, exc.field, name) from None
                children[name].append((number, clear))
        run = open_run_row(self.sealing, {**bundle.run, "run_id": bundle.run_id})
        if run["config"] is not bundle.run["config"]:
            try:
                check_config(base64.b64encode(run["config"]).decode("ascii"))
            except Problem as exc:
                raise self.error(bundle.line, exc.reason, "config", "run") from None
        return _Bundle(bundle.run_id, bundle.line, run, children)

    def check(self, bundle: _Bundle) -> None:
        """Checks across the lines of one run: keys, the chain of states, the blobs."""
        bundle = self.opened(bundle)
        for line_type in CHILDREN:
            seen: set[tuple[Any, ...]] = set()
            for number, row in bundle.children.get(line_type.name, []):
                key = tuple(row[name] for name in line_type.key)
                if key in seen:
                    what = ", ".join(f"{n} {row[n]!r}" for n in line_type.key) or "a thread"
                    raise self.error(number, f"a second line with {what}", kind=line_type.name)
                seen.add(key)
        self.check_steps(bundle)
        for number, blob in bundle.children.get("blob", []):
            try:
                data = decompress(blob["codec"], blob["data"], digest=blob["digest"], where="-")
            except CorruptDataError as exc:
                raise self.error(number, str(exc).removeprefix("-: "), "data", "blob") from None
            if len(data) != blob["size"]:
                raise self.error(
                    number, f"{blob['size']}, but the blob holds {len(data)} bytes", "size", "blob"
                )

    def check_steps(self, bundle: _Bundle) -> None:
        steps = bundle.children.get("step", [])
        run = bundle.run
        previous: int | None = None
        for number, row in steps:
            if previous is not None and row["step"] <= previous:
                raise self.error(
                    number,
                    f"step {row['step']} after step {previous}: step lines go in increasing order",
                    "step",
                    "step",
                )
            previous = row["step"]
        if not steps:
            for name in ("head_step", "snapshot_step"):
                if run[name] is not None:
                    raise self.error(
                        bundle.line, f"{run[name]}, but the run has no step lines", name, "run"
                    )
            return
        last_line, last = steps[-1]
        expected = {
            "head_step": last["step"],
            "head_open": last["is_open"],
            "head_version": last["write_version"],
            "snapshot_step": max(row["step"] for _, row in steps if row["kind"] == "snapshot")
            if any(row["kind"] == "snapshot" for _, row in steps)
            else None,
        }
        for name, value in expected.items():
            if run[name] != value:
                raise self.error(
                    bundle.line,
                    f"{describe(run[name])}, but the step lines say {describe(value)} "
                    f"(the last is line {last_line})",
                    name,
                    "run",
                )
        done = 0
        try:
            for _ in replay(bundle.run_id, [row for _, row in steps]):
                done += 1
        except CorruptDataError as exc:
            raise self.error(steps[done][0], str(exc), "payload", "step") from None
        except RecursionError:
            raise self.error(steps[done][0], "nested too deeply", "payload", "step") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Inexact(ValueError):
    """A line that parses, but not to what it says: it would be imported changed."""


def _exact_float(text: str) -> float:
    """``text`` as a float, unless a nonzero literal underflows to 0.0 (``1e-400``),
    which nothing after could tell. One that overflows (``1e400``) reads as an infinity,
    which every field refuses, naming itself."""
    value = float(text)
    if value == 0.0 and any(c in "123456789" for c in text.split("e")[0].split("E")[0]):
        raise _Inexact(f"the number {text[:40]} is too small for a float (it reads as 0.0)")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; a key given twice would keep only its last value."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Inexact(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return out


def import_runs(
    store: Store,
    lines: Iterable[str | bytes],
    *,
    on_conflict: OnConflict = "error",
    on_run: Callable[[UUID, str], None] | None = None,
    source: str = "the export file",
) -> ImportSummary:
    """Recreate the runs of an export file in ``store``.

    Each line is checked completely (every field: its type, range, encoding; payloads
    against their codecs and checksums, blobs against their sha256) before anything of
    its run is written, and each run is written in one transaction, so a run is
    imported whole or not at all. The import is all-or-nothing **per run**: a bad line
    (an :class:`ExportFormatError` naming ``source``, the line and the field) stops the
    import there; the runs before it stay imported, nothing of its run or after is.
    ``lines`` may be text or bytes (decoded as UTF-8, line by line).

    A run that already exists is an error (``on_conflict="error"``, nothing of it is
    written), left as it is (``"skip"``) or deleted and imported again (``"replace"``).
    ``on_run(run_id, outcome)`` is called after each run.
    """
    summary = ImportSummary()
    try:
        for bundle in _Reader(source, store).bundles(lines):
            _write(store, bundle, on_conflict, summary, on_run)
    except ExportFormatError as exc:
        done = len(summary.imported) + len(summary.replaced)
        outcome = (
            "nothing was imported"
            if not done
            else f"the {done} run{'s' if done != 1 else ''} before it "
            f"{'were' if done != 1 else 'was'} imported, nothing after"
        )
        raise ExportFormatError(f"{exc}; {outcome}", line=exc.line, field=exc.field) from None
    return summary


def _write(
    store: Store,
    bundle: _Bundle,
    on_conflict: OnConflict,
    summary: ImportSummary,
    on_run: Callable[[UUID, str], None] | None,
) -> None:
    rid = bundle.run_id
    outcome = "imported"
    if _exists(store, rid):
        if on_conflict == "skip":
            summary.skipped.append(rid)
            if on_run:
                on_run(rid, "skipped")
            return
        if on_conflict == "error":
            raise ConflictError(
                f"run {rid} already exists in the target store; nothing of it was "
                "imported (use --on-conflict skip or --on-conflict replace)"
            )
        outcome = "replaced"
    # Clears the run, or what a crashed import of it left behind.
    store.delete_run(rid)
    # One transaction: the run appears whole or not at all. Its row goes first, as the
    # rows integrations keep for it reference it.
    writes: list[tuple[str, list[dict[str, Any]]]] = [
        (RUN.import_query, [{**bundle.run, "run_id": rid}])
    ]
    for line_type in CHILDREN:
        rows = [{**row, "run_id": rid} for _, row in bundle.children.get(line_type.name, [])]
        writes.append((line_type.import_query, rows))
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


def _exists(store: Store, run_id: UUID) -> bool:
    try:
        store.get_run(run_id)
    except RunNotFoundError:
        return False
    return True
