"""SIGKILL a real writer process at random moments; no acknowledged step may be lost.

Each round starts ``writer.py``, waits until it acknowledges a new step, lets it run a
random 0.05-0.4 s more, and kills it with SIGKILL. A fresh store then checks the run: the
head is the last acknowledged step or the one after it (committed, killed before it could
print), every kept step holds exactly the state the writer computed for it, and on SQLite
the file passes ``PRAGMA integrity_check``. The next round resumes from that head.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import IO

import pytest

from agentckpt import Store
from agentckpt._backends.factory import parse_url
from tests.crash.store_writer import POLICY, expected_state

WRITER = Path(__file__).with_name("store_writer.py")
KILLS = int(os.environ.get("AGENTCKPT_CRASH_KILLS", "20"))
BUDGET_SECONDS = 40.0


class Writer:
    """A running writer (``script``, store_writer.py by default) whose ACK lines are
    collected as they arrive."""

    def __init__(self, args: list[str], stderr: IO[str], script: Path = WRITER) -> None:
        self.acks: list[int] = []
        self.lines: list[str] = []
        self.first_ack = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            bufsize=1,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith("ACK "):
                    self.acks.append(int(line.split()[-1]))  # the step is last
                    self.first_ack.set()
        self.first_ack.set()  # EOF: the writer died on its own; the caller checks why

    def kill(self) -> int:
        """SIGKILL it, then return the returncode once its output is fully read."""
        self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        return code


def verify(url: str, run_id: str, last_ack: int, tag: str = "") -> int:
    """Check the run as a fresh process would find it; return its head step."""
    with Store.connect(url, migrate=False) as store:
        latest = store.latest(run_id)
        assert latest is not None, "no step survived"
        head = latest.step
        assert head in (last_ack, last_ack + 1), (
            f"head {head} after the last acknowledged step {last_ack}: "
            + ("an acknowledged step was lost" if head < last_ack else "steps from nowhere")
        )
        expected = expected_state(head, tag=tag)
        assert json.dumps(latest.state) == json.dumps(expected), f"step {head}"
        assert store.get_run(run_id).head_step == head
        kept = store.steps(run_id)
        numbers = [info.step for info in kept]
        assert numbers == list(range(numbers[0], head + 1)), f"holes in kept steps {numbers}"
        assert kept[0].kind == "snapshot"
        # A state that grows by less than a quarter of itself in 5 steps waits up to
        # interval * stretch steps for its snapshot (SnapshotPolicy.chain_share).
        assert len(kept) <= POLICY.interval * POLICY.stretch, f"pruning fell behind: {numbers}"
        assert not any(info.is_open for info in kept)
        for info in kept:
            state = store.state_at(run_id, info.step).state
            expected = expected_state(info.step, tag=tag)
            assert json.dumps(state) == json.dumps(expected), info.step
    target = parse_url(url)
    if target.dialect == "sqlite":
        with closing(sqlite3.connect(target.location)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return head


def crash_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A fresh store URL; on PostgreSQL, a short wait so a dead server fails fast."""
    url: str = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url")
    return url + "&wait=10" if backend == "postgres" else url


def writer_name() -> str:
    """A name for one test's writers' sessions (tests may run side by side)."""
    return f"agentckpt-crash-writer-{random.randrange(2**32):08x}"


def writer_url(url: str, name: str) -> str:
    """The writer's URL: on PostgreSQL its sessions carry ``name``, for :func:`settle`."""
    return url + f"&application_name={name}" if url.startswith("postgresql") else url


def settle(url: str, name: str, timeout: float = 20.0) -> None:
    """Wait until the killed writer's server sessions have ended (PostgreSQL).

    SIGKILL ends the client, not the server process running its statement: a commit in
    flight finishes on the server a moment later. Checking the head before that could
    see the step before it, and the next writer (rightly) resume after it.
    """
    if not url.startswith("postgresql"):
        return
    import psycopg

    conninfo = url.split("?", 1)[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                (name,),
            ).fetchone()
            if row is None or row[0] == 0:
                return
            assert time.monotonic() < deadline, f"{row[0]} writer sessions outlived the writer"
            time.sleep(0.01)


@pytest.mark.crash
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_loses_no_acknowledged_step(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = crash_url(backend, request)
    name = writer_name()
    with Store.connect(url) as store:
        run_id = str(store.create_run(agent_id="crash-test").run_id)

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    started = time.monotonic()
    last_ack = 0
    kills_during_commit = 0
    for round_ in range(KILLS):
        where = f"seed {seed}, round {round_}, last ACK {last_ack}"
        with open(tmp_path / f"writer-{round_}.err", "w+") as stderr:
            writer = Writer([writer_url(url, name), run_id], stderr)
            try:
                assert writer.first_ack.wait(timeout=30), f"no ACK within 30 s ({where})"
                if writer.proc.poll() is not None:  # it exited instead of writing
                    writer.kill()
                    stderr.seek(0)
                    pytest.fail(f"writer exited ({where}): {writer.lines} {stderr.read()}")
                time.sleep(rng.uniform(0.05, 0.4))  # the random moment of the kill
            finally:
                code = writer.kill()
        assert code == -signal.SIGKILL, f"writer ended with {code} ({where}): {writer.lines}"
        assert writer.lines[0] == f"START {last_ack}", f"resumed elsewhere ({where})"
        assert writer.acks, f"no ACK ({where})"
        assert writer.acks == list(range(writer.acks[0], writer.acks[-1] + 1))
        assert writer.acks[0] >= last_ack + 1
        last_ack = writer.acks[-1]
        settle(url, name)
        head = verify(url, run_id, last_ack)
        kills_during_commit += head == last_ack + 1
        last_ack = head  # a committed but unacknowledged step is the next round's base

    elapsed = time.monotonic() - started
    assert last_ack >= KILLS  # every round acknowledged at least one new step
    assert elapsed < BUDGET_SECONDS * 2, f"{KILLS} kills took {elapsed:.1f} s"
    # Recorded for whoever reads -rA output; not asserted (it depends on timing).
    print(
        f"{backend}: {KILLS} kills, {last_ack} steps, {kills_during_commit} between commit "
        f"and ACK, {elapsed:.1f} s, seed {seed}"
    )


GROUP_RUNS = 8


def group_acks(lines: list[str], last: dict[str, int], where: str) -> dict[str, list[int]]:
    """The steps the group writer acknowledged, by run; each run must have started from
    the head ``last`` holds for it, and the writer said nothing else."""
    acked: dict[str, list[int]] = {run: [] for run in last}
    for line in lines:
        words = line.split()
        if words[0] == "START":
            assert int(words[2]) == last[words[1]], f"resumed elsewhere ({where}): {line}"
        elif words[0] == "ACK":
            acked[words[1]].append(int(words[2]))
        else:
            pytest.fail(f"writer said {line!r} ({where})")
    return acked


@pytest.mark.crash
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_under_group_commit_loses_no_acknowledged_step(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Eight runs written by one process share batches; kill it; check every run."""
    url = crash_url(backend, request)
    name = writer_name()
    with Store.connect(url) as store:
        runs = [str(store.create_run(agent_id=f"group-{i}").run_id) for i in range(GROUP_RUNS)]

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last = dict.fromkeys(runs, 0)
    for round_ in range(max(1, KILLS // 2)):
        where = f"seed {seed}, round {round_}"
        with open(tmp_path / f"group-{round_}.err", "w+") as stderr:
            writer = Writer(["--group", writer_url(url, name), *runs], stderr)
            try:
                assert writer.first_ack.wait(timeout=30), f"no ACK within 30 s ({where})"
                time.sleep(rng.uniform(0.05, 0.4))
            finally:
                code = writer.kill()
            stderr.seek(0)
            assert code == -signal.SIGKILL, f"writer ended with {code} ({where}): {stderr.read()}"
        settle(url, name)
        acked = group_acks(writer.lines, last, where)
        for run in runs:
            steps = acked[run]
            assert steps == list(range(last[run] + 1, last[run] + 1 + len(steps))), where
            last_ack = steps[-1] if steps else last[run]
            last[run] = verify(url, run, last_ack, tag=run)
    assert all(step > 0 for step in last.values())
