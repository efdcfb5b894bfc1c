"""The README's run loop, as written, resumes after a SIGKILL (issue 12).

The block is read from README.md itself. The first process gets a prelude that makes
each step slow and reports it, so the kill lands mid-run; the second runs the block
unchanged and must finish the same run: every step's note exactly once, one run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import agentckpt
from agentckpt import Store
from tests.docs.blocks import ROOT, parse

SRC = Path(agentckpt.__file__).resolve().parents[1]
# Each commit reports its step on stderr and then waits, so the kill lands mid-run.
# Store._write sends every new step, whether the loop commits through Store.commit or
# through its steady-state entry (Store._commit_next).
SLOW = """
import sys, time
from agentckpt import Store
_write = Store._write
def _slow_write(self, *args, **kwargs):
    info = _write(self, *args, **kwargs)
    print(f"COMMITTED {info.step}", file=sys.stderr, flush=True)
    time.sleep(0.05)
    return info
Store._write = _slow_write
"""


def readme_run_loop() -> str:
    """The README block that says a kill -9 is resumed by the same call."""
    blocks = [b for b in parse(ROOT / "README.md") if "after a kill -9" in b.code]
    assert len(blocks) == 1, "README.md has one run-loop block"
    return blocks[0].code


def test_the_readme_run_loop_resumes_after_sigkill(tmp_path: Path) -> None:
    code = readme_run_loop()
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    first = subprocess.Popen(
        [sys.executable, "-c", SLOW + code],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stderr is not None
    for line in first.stderr:
        if line.strip() == "COMMITTED 12":
            break
    else:
        raise AssertionError(f"the first run ended early: {first.communicate()}")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL

    with Store.connect(f"sqlite:///{tmp_path}/runs.db") as store:
        (killed,) = store.list_runs()
        assert killed.status == "active"
        reached = store.latest(killed.run_id).step
        assert 12 <= reached < 50

    again = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["completed", "50"]
    with Store.connect(f"sqlite:///{tmp_path}/runs.db") as store:
        (run,) = store.list_runs()  # the same run, not a second one
        assert run.run_id == killed.run_id
        assert run.status == "completed"
        notes = store.latest(run.run_id).state["notes"]
    assert notes == [f"step {n}" for n in range(1, 51)], json.dumps(notes)
