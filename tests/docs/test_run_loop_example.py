"""The runnable example of docs/runs.md works as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "run_loop.py"


def test_the_run_loop_example_runs_and_resumes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "worker 1 stops here, as if its process had died" in lines
    assert "worker 2 resumes after step 4" in lines
    assert "run completed at step 8" in lines
    assert "search calls at step 3 (one retry): 2" in lines
    assert "emails sent: 1" in lines
    assert "steps kept: [5, 6, 7, 8]" in lines
    assert any(
        line.startswith("the page in the state is a reference: db:sha256:") for line in lines
    )
    assert "blob garbage collection freed 4 unreferenced pages" in lines
    assert list(tmp_path.iterdir()) == []  # it cleaned up after itself
