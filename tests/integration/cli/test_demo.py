"""``agentckpt demo``: a real agent process, killed with SIGKILL mid-run, resumed exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentckpt import StateMigrations, Store
from agentckpt.demo.agent import AGENT_ID, expected_state


def run_demo(cwd: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTCKPT_URL"}
    if url:
        env["AGENTCKPT_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "agentckpt", "demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def check_store(url: str, steps: int) -> None:
    with Store.connect(url, migrations=StateMigrations(key="no such key")) as store:
        (run,) = store.list_runs(agent_id=AGENT_ID)
        latest = store.latest(run.run_id)
        assert latest is not None
        assert latest.step == steps
        assert latest.state == expected_state(steps)
        assert run.status == "completed"
        assert run.config["tool_registry"] == ["search", "calculator", "read_file"]


@pytest.mark.crash
def test_demo_without_arguments_uses_a_sqlite_file_here(tmp_path: Path) -> None:
    result = run_demo(tmp_path, "--steps", "24", "--kill-at", "9", "--think", "0.05")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"store SQLite file {tmp_path}/agentckpt-demo.db" in out
    assert "SIGKILL after step" in out
    assert "(exit status -9)" in out
    assert "final state vs. an uncrashed run's: EQUAL" in out
    assert "step 20/24 durable" in out  # progress while it runs
    assert "5. storage:" in out
    assert "step rows kept for 24 steps" in out
    assert result.stderr == ""
    check_store(f"sqlite:///{tmp_path}/agentckpt-demo.db", 24)


@pytest.mark.crash
@pytest.mark.postgres
def test_demo_on_postgres(tmp_path: Path, pg_url: str) -> None:
    result = run_demo(tmp_path, "--steps", "24", "--kill-at", "9", url=pg_url)
    assert result.returncode == 0, result.stderr
    assert "EQUAL" in result.stdout
    assert "(exit status -9)" in result.stdout
    assert not (tmp_path / "agentckpt-demo.db").exists()
    check_store(pg_url, 24)


def test_demo_refuses_a_kill_after_the_end(tmp_path: Path) -> None:
    result = run_demo(tmp_path, "--steps", "5", "--kill-at", "5")
    assert result.returncode == 1
    assert (
        result.stderr == "agentckpt demo: error: --kill-at must be between 1 and 4 (--steps - 1)\n"
    )
