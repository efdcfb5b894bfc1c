"""Bad inputs through ``agentckpt import`` (reliability rows 16-22), on both backends.

An export file edited by hand or written by another tool: numbers Python cannot read
exactly (``1e400``, ``1e-400``, 5001 digits), duplicate keys, U+0000 and lone surrogates
where the database cannot keep them, JSON nested 5000 deep, and step payloads holding
any of those. Each is an :class:`ExportFormatError` naming the file line (and the field
where there is one) before the run is written, and what the target held stays as it was.
``tests/integration/cli/test_import_validation.py`` has the field-by-field corpus.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.errors import ExportFormatError
from agentckpt.ops.exchange import export_runs, import_runs
from tests.support.sample_store import cli

META = '"metadata":{"a":1}'


def exported(tmp_path: Any) -> tuple[str, str]:
    """The export of one small run (metadata {"a": 1}, state {"v": 1}), and its id."""
    with Store.connect(f"sqlite:///{tmp_path}/source.db") as source:
        run = source.create_run(metadata={"a": 1})
        source.commit(run.run_id, {"v": 1})
        out = io.StringIO()
        export_runs(source, [run.run_id], out)
    text = out.getvalue()
    assert META in text
    return text, str(run.run_id)


def with_payload(text: str, raw: bytes) -> str:
    """The export with the step's payload replaced by ``raw`` (sizes to match)."""
    old = base64.b64encode(b'{"v":1}').decode()
    assert old in text
    text = text.replace(old, base64.b64encode(raw).decode())
    sizes = f'"raw_bytes":{len(raw)},"state_bytes":{len(raw)}'
    return text.replace('"raw_bytes":7,"state_bytes":7', sizes)


# (case, edit of the export text, line it is on, words the error must hold)
CASES: dict[str, tuple[Any, int, list[str]]] = {
    "metadata 1e400": (lambda t: t.replace(META, '"metadata":{"a":1e400}'), 2, ["metadata", "inf"]),
    "metadata 1e-400": (
        lambda t: t.replace(META, '"metadata":{"a":1e-400}'),
        2,
        ["1e-400", "reads as 0.0"],
    ),
    "metadata 5001 digits": (
        lambda t: t.replace(META, '"metadata":{"a":1' + "0" * 5000 + "}"),
        2,
        ["4300 digits"],
    ),
    "metadata duplicate key": (
        lambda t: t.replace(META, '"metadata":{"a":1,"a":2}'),
        2,
        ["'a' appears twice"],
    ),
    "line duplicate key": (
        lambda t: t.replace(META, META + ',"metadata":{"b":2}'),
        2,
        ["'metadata' appears twice"],
    ),
    "metadata NUL key": (lambda t: t.replace(META, '"metadata":{"a\\u0000":1}'), 2, ["U+0000"]),
    "metadata NUL value": (lambda t: t.replace(META, '"metadata":{"a":"x\\u0000"}'), 2, ["U+0000"]),
    "metadata lone surrogate": (
        lambda t: t.replace(META, '"metadata":{"a":"\\ud800"}'),
        2,
        ["lone surrogate"],
    ),
    "metadata depth 5000": (
        lambda t: t.replace(META, '"metadata":{"a":' + "[" * 5000 + "]" * 5000 + "}"),
        2,
        ["nested too deeply"],
    ),
    "lease owner NUL": (
        lambda t: t.replace('"lease_owner":null', '"lease_owner":"o\\u0000"'),
        2,
        ["lease_owner", "U+0000"],
    ),
    "payload 1e400": (lambda t: with_payload(t, b'{"v":1e400}'), 3, ["payload", "step 1"]),
    "payload 5001 digits": (
        lambda t: with_payload(t, b'{"v":1' + b"0" * 5000 + b"}"),
        3,
        ["payload", "4300 digits"],
    ),
    "payload depth 5000": (
        lambda t: with_payload(t, b'{"v":' + b"[" * 5000 + b"]" * 5000 + b"}"),
        3,
        ["payload", "depth"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_import_line_is_refused_and_the_target_kept(
    case: str, url: str, tmp_path: Any
) -> None:
    text, run_id = exported(tmp_path)
    edit, line, words = CASES[case]
    bad = edit(text)
    assert bad != text
    with Store.connect(url) as target:
        kept = target.create_run(metadata={"kept": True})
        target.commit(kept.run_id, {"kept": 1})
        with pytest.raises(ExportFormatError) as raised:
            import_runs(target, bad.encode().splitlines(), source="runs.jsonl")
        message = str(raised.value)
        assert raised.value.line == line, message
        assert message.startswith(f"runs.jsonl line {line}"), message
        for word in words:
            assert word in message, (word, message)
        assert [r.run_id for r in target.list_runs()] == [kept.run_id]
    with Store.connect(url) as fresh:
        latest = fresh.latest(kept.run_id)
        assert latest is not None
        assert latest.state == {"kept": 1}
        assert fresh.get_run(kept.run_id).metadata == {"kept": True}
        # The untouched export imports: each failure above was its one edit.
        import_runs(fresh, text.encode().splitlines(), source="runs.jsonl")
        imported = fresh.latest(run_id)
        assert imported is not None
        assert imported.state == {"v": 1}


def test_the_cli_says_why_in_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text, _ = exported(tmp_path)
    path = tmp_path / "runs.jsonl"
    path.write_text(text.replace(META, '"metadata":{"a":1e-400}'))
    target = f"sqlite:///{tmp_path}/target.db"
    code, out, err = cli(capsys, "--url", target, "import", str(path))
    assert (code, out) == (1, "")
    assert err == (
        f"agentckpt import: error: {path} line 2: cannot be imported exactly: the number "
        "1e-400 is too small for a float (it reads as 0.0); nothing was imported\n"
    )
