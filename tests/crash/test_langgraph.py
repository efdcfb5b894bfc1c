"""A compiled graph killed with SIGKILL mid-run resumes in a new process to the same result.

The worker (lg_crash_worker.py) hangs in c2 of the parallel superstep (c1, c2), after c1's
write is durable; the test kills it with SIGKILL. A new process invoking the same thread
must finish the graph with the state an uncrashed run reaches, without re-running the
nodes of finished supersteps nor c1, whose write was saved before the kill.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)

pytestmark = pytest.mark.crash

WORKER = Path(__file__).with_name("langgraph_worker.py")


def _worker(url: str, thread_id: str, runs_file: Path, *extra: str) -> list[str]:
    return [sys.executable, str(WORKER), url, thread_id, str(runs_file), *extra]


def _finish(url: str, thread_id: str, runs_file: Path) -> dict[str, Any]:
    done = subprocess.run(
        _worker(url, thread_id, runs_file), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# "async" is LangGraph's default: checkpoints are saved while the next superstep runs.
@pytest.mark.parametrize("durability", ["sync", "async"])
def test_graph_resumes_after_sigkill_to_the_uncrashed_result(
    url: str, tmp_path: Path, durability: str
) -> None:
    runs = tmp_path / "runs.txt"
    hung = subprocess.Popen(
        _worker(url, "crashed", runs, "--hang", "c2", "--durability", durability),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert hung.stdout is not None
        line = hung.stdout.readline()
        assert line.strip() == "HANG", f"worker did not reach c2: {line!r} {hung.stderr.read()!r}"
        os.kill(hung.pid, signal.SIGKILL)
        assert hung.wait(timeout=60) == -signal.SIGKILL
    finally:
        if hung.poll() is None:
            hung.kill()
            hung.wait()
        for stream in (hung.stdout, hung.stderr):
            if stream is not None:
                stream.close()
    assert collections.Counter(runs.read_text().split()) == {"a": 1, "b": 1, "c1": 1, "c2": 1}

    resumed = _finish(url, "crashed", runs)
    reference = _finish(url, "reference", tmp_path / "reference.txt")

    assert resumed["resumed"] is True
    assert reference["resumed"] is False
    assert resumed["state"] == reference["state"]
    assert resumed["state"]["log"] == ["a", "b", "c1", "c2", "d", "e"]
    counts = collections.Counter(runs.read_text().split())
    # Finished supersteps and c1 (its write was durable) never ran again; c2 ran twice.
    assert counts == {"a": 1, "b": 1, "c1": 1, "c2": 2, "d": 1, "e": 1}
