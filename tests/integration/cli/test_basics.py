"""The command line's contract: how the store is chosen, errors are one line, output helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agentckpt.cli import build_parser
from agentckpt.cli.output import format_table, parse_duration
from agentckpt.ops.units import human_bytes
from tests.support.sample_store import cli, populate


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTCKPT_URL"}
    return env | extra


def test_url_from_flag_before_or_after_the_command_or_from_env(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = populate(sqlite_url)
    monkeypatch.delenv("AGENTCKPT_URL", raising=False)
    for argv in (
        ("--url", sqlite_url, "runs", "list", "--ids"),
        ("runs", "list", "--ids", "--url", sqlite_url),
    ):
        code, out, _ = cli(capsys, *argv)
        assert code == 0
        assert str(sample.worker) in out.split()
    monkeypatch.setenv("AGENTCKPT_URL", sqlite_url)
    code, out, _ = cli(capsys, "runs", "list", "--ids")
    assert code == 0
    assert len(out.split()) == 3


def test_no_store_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTCKPT_URL", raising=False)
    code, out, err = cli(capsys, "runs", "list")
    assert code == 1
    assert out == ""
    assert err == (
        "agentckpt runs list: error: no store selected: pass --url URL or set AGENTCKPT_URL "
        "(e.g. sqlite:///agent.db or postgresql://user@host/db)\n"
    )


def test_reading_never_creates_a_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "--url", f"sqlite:///{tmp_path}/typo.db", "stats")
    assert code == 1
    assert "no SQLite database at" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "list", "--older-than", "1x"], "invalid duration '1x'"),
        (["runs", "list", "--older-than", "36501d"], "longer than 100 years"),
        (["retention", "show", "--ended-after", "99999999999d"], "longer than 100 years"),
        (["runs", "show", "not-a-run"], "'not-a-run' is not a run id"),
        (["runs", "diff", str(uuid.uuid4()), "1"], "the following arguments are required"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
        (["demo", "--steps", "0"], "0 is not at least 1"),
        (["migrate", "--check", "--print-sql"], "not allowed with argument"),
        # A subcommand's unknown option names that subcommand, not the top command.
        (["blobs", "gc", "--dry-run"], "agentckpt blobs gc: error: unrecognized arguments"),
        (["runs", "list", "--bogus"], "agentckpt runs list: error: unrecognized arguments"),
        # An unknown option before the command is named, not its value taken for one.
        (["--db", "sqlite:///x.db", "runs", "list"], "unrecognized option --db before"),
        (["--db=sqlite:///x.db", "stats"], "unrecognized option --db before"),
    ],
)
def test_bad_arguments_are_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
    assert "--help" in err


def test_store_errors_are_one_line_without_traceback(sqlite_url: str) -> None:
    populate(sqlite_url)
    missing = str(uuid.uuid4())
    for argv, message in (
        (["runs", "show", missing], f"no run {missing}"),
        (["runs", "diff", missing, "1", "2"], f"no run {missing}"),
        (["--url", "mysql://x/y", "stats"], "unsupported store URL"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "agentckpt", *argv],
            capture_output=True,
            text=True,
            env=_env(AGENTCKPT_URL=sqlite_url),
            check=False,
        )
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert message in result.stderr
        assert result.stderr.count("\n") == 1
        assert result.stdout == ""


def test_help_lists_every_command() -> None:
    text = build_parser().format_help()
    for command in (
        "demo",
        "migrate",
        "runs",
        "fork",
        "delete",
        "prune",
        "export",
        "import",
        "stats",
        "doctor",
        "inspect",
    ):
        assert command in text


def test_parse_duration() -> None:
    assert parse_duration("45s") == 45
    assert parse_duration("15m") == 900
    assert parse_duration("1h") == 3600
    assert parse_duration("1.5d") == 129600
    assert parse_duration("2w") == 1209600
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("10")
    assert parse_duration("36500d") == 36500 * 86400
    with pytest.raises(ValueError, match="longer than 100 years"):
        parse_duration("5300w")


def test_human_bytes() -> None:
    assert human_bytes(999) == "999 B"
    assert human_bytes(1234) == "1.2 KB"
    assert human_bytes(5_600_000) == "5.6 MB"
    assert human_bytes(None) == "-"


def test_format_table_aligns_numbers_and_sizes_right() -> None:
    text = format_table(("NAME", "ROWS", "SIZE"), [("a", 5, "1.2 KB"), ("bbbb", 12345, "7 B")])
    assert text.splitlines() == [
        "NAME   ROWS    SIZE",
        "----  -----  ------",
        "a         5  1.2 KB",
        "bbbb  12345     7 B",
    ]
