"""The docs' runnable example works as shipped: SQLite in a temp dir, no network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversation_quickstart.py"


def test_the_quickstart_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "turn 2 is pending" in out
    assert "flushed partial reply: 'Paris was sunnier, '" in out
    assert "refused to resume with another config: agent_config.temperature" in out
    assert "assistant: Paris was sunnier, with about 14 degrees." in out
    assert list(tmp_path.iterdir()) == []  # it cleaned up after itself
