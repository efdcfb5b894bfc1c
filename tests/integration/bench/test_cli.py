"""Smoke runs of ``python -m agentckpt.bench --quick``: structure, not speed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentckpt.bench import cli
from agentckpt.bench.subjects import langgraph

ALL = {"agentckpt", "seed000", "floor", "batched", "langgraph"}
SHAPES = {"30_keys", "300_keys"}


def _expected(dialect: str) -> set[str]:
    # LangGraph's savers are an optional extra: without them the subject is skipped.
    if langgraph.LangGraphSavers().unavailable(dialect):
        return ALL - {"langgraph"}
    return ALL


def _check_backend(backend: dict[str, Any], agents: int, dialect: str) -> None:
    subjects = _expected(dialect)
    assert set(backend["skipped"]) == ALL - subjects
    assert backend["errors"] == {}
    for mode in ("paced", "saturated"):
        cases = backend["conversation"][mode]
        assert set(cases) == subjects
        for case in cases.values():
            assert case["writes"] == 2 * case["turns"] == 2 * agents * 3
            assert case["write_latency"]["count"] == case["writes"]
            assert case["resume_latency"]["count"] == agents
            assert case["storage"]["bytes"] > 0
            assert case["storage"]["rows"] > 0
        advantage = backend["advantage"][f"conversation_{mode}"]
        assert set(advantage) == subjects - {"agentckpt"}
        for ratios in advantage.values():
            assert ratios["bytes stored"] > 0
            assert ratios["turns/s"] > 0
    assert set(backend["long_run"]) == SHAPES
    for shape in SHAPES:
        assert set(backend["long_run"][shape]) == subjects
        assert all(case["steps"] == 30 for case in backend["long_run"][shape].values())
    content = backend["content"]
    assert content["states"] == agents
    assert 0 < content["zstd_bytes"] < content["json_bytes"]
    statuses = [t["status"] for t in backend["targets"]]
    # 8 conversation targets, 5 per long-run shape, 1 comparing the shapes.
    assert len(statuses) == 8 + 2 * 5 + 1
    assert set(statuses) <= {"met", "MISSED", "n/a"}
    assert statuses.count("n/a") == (0 if "langgraph" in subjects else 2)


def test_quick_run_on_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    code = cli.main(
        [
            "--quick",
            "--backend",
            "sqlite",
            "--sqlite-dir",
            str(tmp_path / "db"),
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    _check_backend(report["backends"]["sqlite"], agents=4, dialect="sqlite")
    assert report["settings"]["config"]["agents"] == 4
    assert report["settings"]["environment"]["python"]
    printed = capsys.readouterr().out
    assert "| write P99 (ms) |" in printed
    assert "vs (a)" in printed
    assert "### Targets (SQLite)" in printed
    assert not list((tmp_path / "db").glob("*.db"))  # files removed without --keep


def test_repeated_rounds_report_each_figure_as_the_median_of_the_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    arguments = ["--quick", "--backend", "sqlite", "--subjects", "agentckpt,seed000"]
    code = cli.main([*arguments, "--repeat", "3", "--overlap", "--json", str(out), "--quiet"])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["settings"]["config"]["repeat"] == 3
    backend = report["backends"]["sqlite"]
    conversations = backend["conversation"]["saturated"]
    runs = backend["long_run"]["30_keys"]
    # The overlapped subject runs the long run only (its conversations are the default
    # subject's code path).
    assert set(conversations) == {"agentckpt", "seed000"}
    assert set(runs) == {"agentckpt", "seed000", "agentckpt_overlap"}
    cases = [*conversations.values(), *runs.values()]
    for case in cases:
        rounds = case["rounds"]
        assert len(rounds) == 3
        for figure in ("wall_s", "client_cpu_s"):
            assert case[figure] == sorted(r[figure] for r in rounds)[1]
        assert (
            case["write_latency"]["p99_ms"]
            == sorted(r["write_latency"]["p99_ms"] for r in rounds)[1]
        )
    printed = capsys.readouterr().out
    assert "each figure is the median of 3 rounds" in printed


@pytest.mark.postgres
def test_quick_run_on_postgres(pg_server_dsn: str, tmp_path: Path) -> None:
    before = os.environ.get("PGAPPNAME")
    out = tmp_path / "bench.json"
    prefix = f"t_{uuid.uuid4().hex[:8]}"
    code = cli.main(
        [
            "--quick",
            "--backend",
            "postgres",
            "--pg-url",
            pg_server_dsn.split("?")[0],
            "--schema-prefix",
            prefix,
            "--agents",
            "3",
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    backend = json.loads(out.read_text())["backends"]["postgresql"]
    _check_backend(backend, agents=3, dialect="postgresql")
    assert backend["server"]["synchronous_commit"]
    tables = backend["long_run"]["30_keys"]["agentckpt"]["storage"]["tables"]
    assert tables["steps"]["rows"] <= 30
    # The server runs on this machine: its backends' CPU is read from /proc.
    assert os.environ.get("PGAPPNAME") == before  # the run's name does not outlive it
    for case in backend["conversation"]["saturated"].values():
        assert case["server_cpu_s"] is not None
        assert case["server_cpu_s"] >= 0


def test_missing_langgraph_is_skipped_with_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(langgraph, "_missing", lambda module: True)
    code = cli.main(
        [
            "--quick",
            "--backend",
            "sqlite",
            "--mode",
            "saturated",
            "--subjects",
            "agentckpt,langgraph",
            "--sqlite-dir",
            str(tmp_path),
            "--quiet",
            "--steps",
            "3",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "skipped (c) langgraph-sqlite: langgraph-checkpoint-sqlite is not installed" in printed
    assert "| (c) langgraph-sqlite" not in printed


@pytest.mark.parametrize(
    "arguments",
    [
        ["--subjects", "agentckpt,nosuch"],
        ["--state-keys", "30,x"],
        ["--state-keys", "30,30"],
        ["--state-keys", "0"],
        ["--curve-turns", "0"],
        ["--repeat", "0"],
        ["--ahead", "0"],
    ],
)
def test_bad_arguments_exit_with_usage_error(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(arguments)
    assert exc.value.code == 2
    assert arguments[0] in capsys.readouterr().err


def test_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentckpt.bench",
            "--quick",
            "--backend",
            "sqlite",
            "--mode",
            "saturated",
            "--subjects",
            "agentckpt,floor",
            "--steps",
            "3",
            "--sqlite-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "### Conversations, saturated: 4 agents x 3 turns" in result.stdout
    assert "agentckpt conversations saturated: 24 writes" in result.stderr


def test_the_agentckpt_command_runs_the_benchmark(tmp_path: Path) -> None:
    from agentckpt.cli import main as agentckpt_main

    out = tmp_path / "bench.json"
    status = agentckpt_main(
        [
            "bench",
            "--quick",
            "--backend",
            "sqlite",
            "--subjects",
            "agentckpt,seed000",
            "--sqlite-dir",
            str(tmp_path),
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert status == 0
    assert out.exists()


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_help_imports_neither_the_driver_nor_langgraph() -> None:
    done = _python(
        "import sys\n"
        "from agentckpt.cli import main\n"
        "try:\n"
        "    main(['bench', '--help'])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'psycopg', 'psycopg_pool', "
        "'langgraph', 'aiosqlite'}))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["exit 0", "[]"]
    assert "usage: agentckpt bench" in done.stdout


def test_a_run_without_the_bench_extra_names_it_in_one_line() -> None:
    done = _python(
        "import sys\n"
        "sys.modules['psycopg'] = None  # as on the base install\n"
        "sys.modules['psycopg_pool'] = None\n"
        "from agentckpt.cli import main\n"
        "raise SystemExit(main(['bench', '--quick', '--backend', 'sqlite']))\n"
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "agentckpt bench needs the bench extra: pip install 'agentckpt[bench]' "
        "(missing: psycopg, psycopg_pool)\n"
    )


def test_an_unloadable_driver_is_named_too() -> None:
    if importlib.util.find_spec("psycopg_c") is not None:
        pytest.skip("psycopg[c] is installed: PSYCOPG_IMPL=c would load")
    done = _python(
        "import os\n"
        "os.environ['PSYCOPG_IMPL'] = 'c'  # an implementation that is not installed\n"
        "from agentckpt.bench.cli import main\n"
        "raise SystemExit(main(['--quick']))\n"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "agentckpt bench needs the bench extra: pip install 'agentckpt[bench]' (psycopg: "
    )
    assert "Traceback" not in done.stderr
