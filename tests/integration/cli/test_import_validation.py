"""``agentckpt import`` refuses bad input: one line naming the file line and the field,
exit status 1, no traceback, and nothing of the bad run in the target store.

The import is all-or-nothing per run: the runs before the bad one (two here: the sample
file holds the idle run, the worker, then the conversation with a row of every table)
are imported; nothing of the bad run is written. Each case below spoils one field of
one line of the conversation in one way.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.errors import ExportFormatError
from agentckpt.ops.exchange import export_runs, import_runs
from tests.support.sample_store import cli, populate, raw_sql

TABLES = ("runs", "steps", "blobs", "history", "effects", "events")
FRAMEWORK_TABLES = ("run_threads", "step_index", "step_writes")
DEEP = 10_000


@dataclass(frozen=True)
class Sample:
    records: list[dict[str, Any]]
    conversation: str  # the run id of the spoiled run

    def index(self, kind: str, nth: int = 0) -> int:
        """The position (0-based) of the conversation's nth line of ``kind``."""
        found = [
            i
            for i, r in enumerate(self.records)
            if r.get("type") == kind and r.get("run_id") == self.conversation
        ]
        return found[nth]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    url = f"sqlite:///{tmp_path_factory.mktemp('source')}/source.db"
    ids = populate(url)
    out = io.StringIO()
    with Store.connect(url) as store:
        order = [ids.empty, ids.worker, ids.conversation]  # the conversation last
        export_runs(store, order, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    return Sample(records, str(ids.conversation))


Spoil = Callable[[Sample], tuple[list[bytes], int]]


def encode(records: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(r, ensure_ascii=False).encode() for r in records]


def row(kind: str, change: Callable[[dict[str, Any]], None], nth: int = 0) -> Spoil:
    """Spoil the row of the conversation's nth ``kind`` line."""

    def spoil(sample: Sample) -> tuple[list[bytes], int]:
        records = json.loads(json.dumps(sample.records))
        at = sample.index(kind, nth)
        change(records[at]["row"] if kind != "line" else records[at])
        return encode(records), at + 1

    return spoil


def setter(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(target: dict[str, Any]) -> None:
        target[name] = value

    return change


def plain_payload(data: bytes) -> Callable[[dict[str, Any]], None]:
    """A step payload stored uncompressed (the sample's states are zstd)."""

    def change(target: dict[str, Any]) -> None:
        target["codec"] = "json"
        target["payload"] = b64(data)

    return change


def deleter(name: str) -> Callable[[dict[str, Any]], None]:
    def change(target: dict[str, Any]) -> None:
        del target[name]

    return change


def line(kind: str, make: Callable[[bytes], bytes], nth: int = 0) -> Spoil:
    """Replace the conversation's nth ``kind`` line by ``make(its bytes)``."""

    def spoil(sample: Sample) -> tuple[list[bytes], int]:
        lines = encode(sample.records)
        at = sample.index(kind, nth)
        lines[at] = make(lines[at])
        return lines, at + 1

    return spoil


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def deep_metadata(target: dict[str, Any]) -> None:
    value: Any = {}
    for _ in range(40):
        value = {"k": value}
    target["metadata"] = value


def whole_record(kind: str, change: Callable[[dict[str, Any]], None]) -> Spoil:
    def spoil(sample: Sample) -> tuple[list[bytes], int]:
        records = json.loads(json.dumps(sample.records))
        at = sample.index(kind)
        change(records[at])
        return encode(records), at + 1

    return spoil


def duplicate(kind: str) -> Spoil:
    def spoil(sample: Sample) -> tuple[list[bytes], int]:
        records = json.loads(json.dumps(sample.records))
        at = sample.index(kind)
        records.insert(at + 1, records[at])
        return encode(records), at + 2

    return spoil


def swap_steps(sample: Sample) -> tuple[list[bytes], int]:
    records = json.loads(json.dumps(sample.records))
    a, b = sample.index("step", 3), sample.index("step", 4)
    records[a], records[b] = records[b], records[a]
    return encode(records), b + 1


def zstd_garbage(target: dict[str, Any]) -> None:
    target["codec"] = "zstd"
    target["payload"] = b64(b"not zstd at all")


def changed_blob(target: dict[str, Any]) -> None:
    target["codec"] = "none"
    target["data"] = b64(b"other bytes")


CASES: dict[str, tuple[Spoil, str, str | None]] = {
    # The cases: tracebacks before.
    "invalid UTF-8": (line("step", lambda b: b.replace(b'"codec"', b'"c\xffdec"')), "UTF-8", None),
    "payload is a number": (row("step", setter("payload", 5)), "not a base64 string", "payload"),
    "checksum is a number": (row("step", setter("checksum", 7)), "not a sha256", "checksum"),
    "nesting 10,000 deep (the line)": (
        line("step", lambda b: b"[" * DEEP + b"]" * DEEP),
        "nested too deeply",
        None,
    ),
    "nesting 10,000 deep (in the row)": (
        line(
            "step",
            lambda b: b.replace(b'"step": 1,', b'"step": ' + b"[" * DEEP + b"]" * DEEP + b","),
        ),
        "nested too deeply",
        None,
    ),
    "nesting 10,000 deep (in a state)": (
        row("step", plain_payload(b"[" * DEEP + b"]" * DEEP)),
        "cannot be decoded",
        "payload",
    ),
    # The cases: rows were left behind before.
    "metadata not an object": (
        row("run", setter("metadata", [1])),
        "not a JSON object",
        "metadata",
    ),
    "metadata too deep": (row("run", deep_metadata), "metadata", "metadata"),
    "metadata with U+0000": (
        row("run", setter("metadata", {"a": "x\u0000"})),
        "U+0000",
        "metadata",
    ),
    "config not base64": (row("run", setter("config", "%%%")), "not valid base64", "config"),
    "config not JSON": (row("run", setter("config", b64(b"{oops"))), "not an exact JSON", "config"),
    "config not an object": (
        row("run", setter("config", b64(b"[1]"))),
        "not a JSON object",
        "config",
    ),
    "config nested 10,000 deep": (
        row("run", setter("config", b64(b"[" * DEEP + b"]" * DEEP))),
        "not an exact JSON",
        "config",
    ),
    "epoch not an integer": (
        row("run", setter("lease_epoch", "7")),
        "not an integer",
        "lease_epoch",
    ),
    "epoch a float": (row("run", setter("lease_epoch", 7.0)), "not an integer", "lease_epoch"),
    "epoch a boolean": (row("run", setter("lease_epoch", True)), "not an integer", "lease_epoch"),
    "epoch negative": (row("run", setter("lease_epoch", -1)), "out of range", "lease_epoch"),
    "epoch past 64 bits": (row("run", setter("lease_epoch", 2**64)), "out of range", "lease_epoch"),
    "timestamp not a time": (
        row("run", setter("created_at", "yesterday")),
        "not an ISO 8601 time",
        "created_at",
    ),
    "timestamp without offset": (
        row("step", setter("updated_at", "2025-03-15T10:00:00")),
        "without a UTC offset",
        "updated_at",
    ),
    "timestamp a number": (row("blob", setter("created_at", 0)), "not an ISO 8601", "created_at"),
    # Not checked at all before.
    "is_open a string": (row("step", setter("is_open", "yes")), "not true or false", "is_open"),
    "head_open a number": (row("run", setter("head_open", 1)), "not true or false", "head_open"),
    "status a number": (row("run", setter("status", 7)), "not a string", "status"),
    "kind a number": (row("run", setter("kind", 7)), "not a string", "kind"),
    "step kind unknown": (row("step", setter("kind", "full")), "not one of", "kind"),
    "step codec unknown": (row("step", setter("codec", "gzip")), "not one of", "codec"),
    "blob codec unknown": (row("blob", setter("codec", "json")), "not one of", "codec"),
    "checksum not hex": (row("step", setter("checksum", "zz" * 32)), "not a sha256", "checksum"),
    "checksum too short": (row("step", setter("checksum", "ab")), "not a sha256", "checksum"),
    "step negative": (row("step", setter("step", -3)), "out of range", "step"),
    "write_version zero": (
        row("step", setter("write_version", 0)),
        "out of range",
        "write_version",
    ),
    "missing field": (row("step", deleter("updated_at")), "missing", "updated_at"),
    "unknown field": (row("step", setter("colour", "red")), "not a field of a step line", "colour"),
    "null where a value is needed": (row("run", setter("agent_id", None)), "null", "agent_id"),
    "agent id with U+0000": (row("run", setter("agent_id", "a\u0000b")), "U+0000", "agent_id"),
    "lone surrogate in text": (
        line("effect", lambda b: b.replace(b'"send_email"', b'"\\ud800"')),
        "lone surrogate",
        "key",
    ),
    "parent run id not a UUID": (
        row("run", setter("parent_run_id", "nope")),
        "not a UUID",
        "parent_run_id",
    ),
    "event id not a UUID": (row("event", setter("event_id", "e-1")), "not a UUID", "event_id"),
    "row not an object": (whole_record("step", setter("row", [])), "not a JSON object", "row"),
    "run id not a UUID": (whole_record("run", setter("run_id", "run-1")), "not a UUID", "run_id"),
    "line of another run": (
        whole_record("step", setter("run_id", "00000000-0000-0000-0000-000000000001")),
        "outside its run",
        None,
    ),
    "unknown key of a line": (whole_record("blob", setter("extra", 1)), "not a key", "extra"),
    "unknown line type": (
        whole_record("event", setter("type", "evnt")),
        "unknown line type",
        "type",
    ),
    "NaN": (line("history", lambda b: b.replace(b'"seq": 1', b'"seq": NaN')), "not JSON", None),
    "not an object": (line("effect", lambda b: b"[1, 2]"), "not a JSON object", None),
    # Payloads, blobs and the chain, against their codecs, digests and checksums.
    "state not matching its checksum": (
        row("step", plain_payload(b'{"other":1}')),
        "checksum",
        "payload",
    ),
    "zstd state that does not decompress": (
        row("step", setter("payload", b64(b"not zstd"))),
        "decompress",
        "payload",
    ),
    "zstd state read as plain JSON": (
        row("step", setter("codec", "json")),
        "cannot be decoded",
        "payload",
    ),
    "history payload not JSON": (
        row("history", setter("payload", b64(b"[1,"))),
        "cannot be decoded",
        "payload",
    ),
    "effect payload not JSON": (
        row("effect", setter("payload", b64(b"\xff"))),
        "cannot be decoded",
        "payload",
    ),
    "event payload nested 10,000 deep": (
        row("event", setter("payload", b64(b"[" * DEEP + b"]" * DEEP))),
        "cannot be decoded",
        "payload",
    ),
    "step write that does not decompress": (
        row("step_write", zstd_garbage),
        "decompress",
        "payload",
    ),
    "step index metadata not JSON": (
        row("step_index", setter("metadata", "{x")),
        "not JSON text",
        "metadata",
    ),
    "blob not matching its digest": (row("blob", changed_blob), "sha256", "data"),
    "blob size wrong": (row("blob", setter("size", 1)), "holds 8000 bytes", "size"),
    "blob digest not hex": (row("blob", setter("digest", "sha256:abc")), "not a sha256", "digest"),
    "duplicate step": (duplicate("step"), "a second line with step", None),
    "duplicate blob": (duplicate("blob"), "a second line with digest", None),
    "second thread": (duplicate("thread"), "a second line", None),
    "steps out of order": (swap_steps, "increasing order", "step"),
}


def target_rows(url: str, run_id: str) -> dict[str, int]:
    counts = {}
    for table in TABLES + FRAMEWORK_TABLES:
        ((count,),) = raw_sql(url, f"SELECT count(*) FROM {table} WHERE run_id = ?", run_id)
        counts[table] = count
    return counts


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_writes_nothing_of_its_run(
    case: str, sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spoil, message, field = CASES[case]
    lines, number = spoil(sample)
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    target = f"sqlite:///{tmp_path}/target.db"

    code, out, err = cli(capsys, "--url", target, "import", str(path))

    assert code == 1
    assert out == ""
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"agentckpt import: error: {path} line {number}"), err
    assert message in err
    if field is not None:
        assert f'field "{field}"' in err
    assert err.rstrip().endswith("the 2 runs before it were imported, nothing after"), err
    assert target_rows(target, sample.conversation) == dict.fromkeys(TABLES + FRAMEWORK_TABLES, 0)
    assert raw_sql(target, "SELECT count(*) FROM runs") == [(2,)]


def test_the_unspoiled_sample_imports(
    sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus spoils a file that is good as exported: each failure is its one change."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(encode(sample.records)) + b"\n")
    target = f"sqlite:///{tmp_path}/target.db"
    code, out, err = cli(capsys, "--url", target, "import", str(path))
    assert (code, err) == (0, "")
    assert out == "imported 3 runs, replaced 0, skipped 0 that already existed\n"
    assert target_rows(target, sample.conversation)["steps"] == 12


CROSS_BACKEND = [
    "payload is a number",
    "epoch not an integer",
    "timestamp not a time",
    "metadata not an object",
    "blob not matching its digest",
]


@pytest.mark.parametrize("case", CROSS_BACKEND)
def test_bad_input_writes_nothing_on_either_backend(case: str, sample: Sample, url: str) -> None:
    spoil, message, field = CASES[case]
    lines, number = spoil(sample)
    with Store.connect(url) as store:
        with pytest.raises(ExportFormatError) as caught:
            import_runs(store, lines, source="runs.jsonl")
        assert [r.run_id for r in store.list_runs()] != []
        assert str(sample.conversation) not in {str(r.run_id) for r in store.list_runs()}
    assert caught.value.line == number
    assert caught.value.field == field
    assert re.match(rf"runs\.jsonl line {number}\b", str(caught.value))
    assert message in str(caught.value)
    assert target_rows(url, sample.conversation) == dict.fromkeys(TABLES + FRAMEWORK_TABLES, 0)


def test_a_bad_first_run_imports_nothing(
    sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = json.loads(json.dumps(sample.records))
    records[1]["row"]["lease_epoch"] = "x"  # the first run's line
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(encode(records)) + b"\n")
    target = f"sqlite:///{tmp_path}/target.db"
    code, _, err = cli(capsys, "--url", target, "import", str(path))
    assert code == 1
    assert err == (
        f'agentckpt import: error: {path} line 2 (run line): field "lease_epoch": '
        'not an integer (got the string "x"); nothing was imported\n'
    )
    assert raw_sql(target, "SELECT count(*) FROM runs") == [(0,)]


def test_standard_input_is_named(
    sample: Sample,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines, number = CASES["invalid UTF-8"][0](sample)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\n".join(lines) + b"\n")))
    target = f"sqlite:///{tmp_path}/target.db"
    code, _, err = cli(capsys, "--url", target, "import", "-")
    assert code == 1
    assert err.startswith(f"agentckpt import: error: standard input line {number}: not UTF-8")
