"""``agentckpt import --from langgraph-postgres URL | langgraph-sqlite PATH``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sample_store import cli

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)
pytest.importorskip("langgraph.checkpoint.sqlite", reason="needs langgraph-checkpoint-sqlite")
pytest.importorskip("langgraph.checkpoint.postgres", reason="needs langgraph-checkpoint-postgres")

from agentckpt.integrations.langgraph import AgentckptSaver
from tests.integration.langgraph import migration_graph as mg

THREADS = ["alice", "bob"]


@pytest.fixture
def sqlite_source(tmp_path: Path) -> str:
    """A SqliteSaver file with the migration graph's threads."""
    path = str(tmp_path / "langgraph.sqlite")
    with mg.sqlite_saver(path) as saver:
        mg.start_threads(mg.build(saver))
    return path


@pytest.fixture
def postgres_source(pg_server_dsn: str) -> Iterator[str]:
    """A PostgresSaver schema with the migration graph's threads: its connection string."""
    with mg.postgres_schema(pg_server_dsn) as conn_string:
        with mg.postgres_saver(conn_string) as saver:
            mg.start_threads(mg.build(saver))
        yield conn_string


def checkpoint_count(saver: Any) -> int:
    return sum(len(mg.checkpoints(saver, t)) for t in THREADS)


@pytest.mark.parametrize("kind", ["langgraph-sqlite", "langgraph-postgres"])
def test_import_copies_every_thread_and_a_rerun_copies_nothing(
    capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest, kind: str, url: str
) -> None:
    location = request.getfixturevalue(kind.replace("langgraph-", "") + "_source")
    opener = mg.sqlite_saver if kind == "langgraph-sqlite" else mg.postgres_saver
    with opener(location) as theirs:
        total = checkpoint_count(theirs)
        expected = {t: mg.checkpoints(theirs, t) for t in THREADS}

    code, out, err = cli(capsys, "import", "--from", kind, location, "--url", url, "--json")

    assert (code, err) == (0, "")
    summary = json.loads(out)
    assert summary["imported"] == THREADS
    assert summary["checkpoints"] == total
    assert summary["threads"] == 2
    assert summary["dry_run"] is False
    with AgentckptSaver.from_url(url) as saver:
        assert {t: mg.checkpoints(saver, t) for t in THREADS} == expected
        mg.resume(mg.build(saver), "alice", "from the CLI")  # the interrupt is still pending
        assert mg.build(saver).get_state(mg.config("alice")).next == ()

    code, out, _ = cli(capsys, "import", "--from", kind, location, "--url", url)
    assert code == 1  # alice went on in agentckpt: a conflict, nothing written
    code, out, _ = cli(
        capsys, "import", "--from", kind, location, "--url", url, "--on-conflict", "skip"
    )
    assert code == 0
    assert out == (
        f"copied 0 checkpoints and 0 writes of 2 threads from {summary['source']}: "
        "0 new, 0 updated, 1 unchanged, 0 replaced, 1 skipped\n"
    )


def test_a_dry_run_counts_and_creates_no_store(
    capsys: pytest.CaptureFixture[str], sqlite_source: str, tmp_path: Path
) -> None:
    target = tmp_path / "new.db"
    code, out, err = cli(
        capsys, "import", "--from", "langgraph-sqlite", sqlite_source,
        "--url", f"sqlite:///{target}", "--dry-run", "--json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    dry = json.loads(out)
    assert dry["dry_run"] is True
    assert dry["imported"] == THREADS
    assert not target.exists()

    code, out, _ = cli(
        capsys, "import", "--from", "langgraph-sqlite", sqlite_source,
        "--url", f"sqlite:///{target}", "--json",
    )  # fmt: skip
    real = json.loads(out)
    assert (real["checkpoints"], real["writes"]) == (dry["checkpoints"], dry["writes"])
    assert real["writes"] > 0


def test_progress_shows_threads_and_checkpoints_on_a_terminal(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sqlite_source: str,
    tmp_path: Path,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = cli(
        capsys, "import", "--from", "langgraph-sqlite", sqlite_source,
        "--url", f"sqlite:///{tmp_path}/store.db",
    )  # fmt: skip
    assert code == 0
    shown = terminal.getvalue()
    total = int(out.split()[1])
    assert "import checkpoints [" in shown
    assert f"{total}/{total} 2/2 threads" in shown
    assert "1/2 threads" in shown


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--from", "langgraph-sqlite", "{tmp}/missing.db"], "no SQLite database at"),
        (["--from", "langgraph-sqlite", "{tmp}/store.db"], "not a LangGraph SqliteSaver database"),
        (["--from", "langgraph-postgres", "postgresql://root@127.0.0.1:1/x"], "cannot connect"),
    ],
)
def test_a_source_that_is_not_langgraphs_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    assert cli(capsys, "migrate", "--url", url)[0] == 0
    code, out, err = cli(
        capsys, "import", *[a.replace("{tmp}", str(tmp_path)) for a in argv], "--url", url
    )
    assert code == 1
    assert out == ""
    assert err.startswith("agentckpt import: error: ")
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs.jsonl", "--dry-run"], "--dry-run works with --from"),
        (["--from", "langgraph-mysql", "x"], "invalid choice"),
    ],
)
def test_a_wrong_command_line_is_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    code, _, err = cli(capsys, "import", *argv, "--url", f"sqlite:///{tmp_path}/s.db")
    assert code == 2
    assert message in err


def test_without_langgraph_the_cli_works_and_says_what_to_install(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["langgraph"] = None  # as if it were not installed
        from agentckpt.cli import main
        print("migrate", main(["migrate", "--url", "sqlite:///{tmp_path}/s.db"]))
        print("import", main(["import", "--from", "langgraph-sqlite", "{tmp_path}/s.db",
                              "--url", "sqlite:///{tmp_path}/s.db"]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert "migrate 0" in done.stdout
    assert "import 1" in done.stdout
    assert done.stderr.strip().splitlines() == [
        "agentckpt import: error: --from langgraph-sqlite needs LangGraph (langgraph is not "
        "installed): pip install 'agentckpt[langgraph]'"
    ]
