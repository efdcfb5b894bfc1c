"""The code stays typed and linted: mypy --strict and ruff run as part of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_strict() -> None:
    result = run(sys.executable, "-m", "mypy", "src/agentckpt")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_lint() -> None:
    result = run(sys.executable, "-m", "ruff", "check", "src", "tests", "examples", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run(
        sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "examples", "scripts"
    )
    assert result.returncode == 0, result.stdout + result.stderr
