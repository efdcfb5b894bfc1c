"""Simulated power loss on SQLite (reliability row 4): nothing acknowledged is lost.

Each round starts ``store_writer.py`` under the power-loss shim (``powerloss.c``, built
here into a temporary directory), lets it commit for a random moment, SIGKILLs it and
then discards every write to the database's files that no fsync/fdatasync had made
durable, as a power cut would. A fresh store must then find every acknowledged step,
exactly, and ``PRAGMA integrity_check`` must be ok, with agentckpt's default settings
(WAL, ``synchronous=FULL``). A control writer using plain ``sqlite3`` with
``synchronous=OFF`` loses acknowledged commits under the same cuts, which shows the cut
really throws writes away.

Needs a C compiler (gcc or cc): skipped without one, failed under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentckpt import RunNotFoundError, Store
from agentckpt.conversation import Conversations
from tests.crash.conversation_agent import CONFIG, TOOLS, expected_messages
from tests.crash.powerloss import build_shim, cut_power, shim_env
from tests.crash.test_store import WRITER, group_acks, verify

RUN_AGENT = Path(__file__).with_name("run_agent.py")
CONVERSATION_AGENT = Path(__file__).with_name("conversation_agent.py")

CUTS = int(os.environ.get("AGENTCKPT_POWER_CUTS", "12"))


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    library = build_shim(tmp_path_factory.mktemp("powerloss"))
    if library is None:
        message = "no C compiler (gcc or cc) to build the power-loss shim"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return library


def run_until_cut(
    args: list[str], env: dict[str, str], rng: random.Random, stderr: Path
) -> list[str]:
    """Start a writer, wait for its first ACK, let it run a random moment, SIGKILL it;
    return the lines it printed."""
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1, env=env
        )
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 30
        for line in proc.stdout:  # up to the first ACK (or the writer's end)
            lines.append(line.rstrip("\n"))
            if line.startswith("ACK ") or time.monotonic() > deadline:
                break
        time.sleep(rng.uniform(0.02, 0.3))  # the random moment of the cut
        proc.send_signal(signal.SIGKILL)
        # Read the rest through the same buffered stream (communicate() would read the
        # pipe underneath it and miss the lines already buffered).
        lines.extend(proc.stdout.read().splitlines())
        proc.stdout.close()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, lines, stderr.read_text())
    return lines


@pytest.mark.crash
def test_power_loss_loses_no_acknowledged_step(shim: Path, tmp_path: Path) -> None:
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory.resolve()}/runs.db"
    with Store.connect(url) as store:
        run_id = str(store.create_run(agent_id="power-loss").run_id)

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last_ack = 0
    discarded = 0
    cut_mid_commit = 0
    for cut in range(CUTS):
        where = f"seed {seed}, cut {cut}, last ACK {last_ack}"
        journal = tmp_path / f"journal-{cut}"
        lines = run_until_cut(
            [sys.executable, str(WRITER), url, run_id],
            shim_env(shim, directory, journal),
            rng,
            tmp_path / f"writer-{cut}.err",
        )
        assert lines[0] == f"START {last_ack}", f"resumed elsewhere ({where}): {lines[:3]}"
        acks = [int(line.split()[-1]) for line in lines if line.startswith("ACK ")]
        assert acks, f"no ACK ({where}): {lines}"
        assert acks == list(range(last_ack + 1, acks[-1] + 1)), where
        undone = cut_power(journal)
        discarded += undone
        head = verify(url, run_id, acks[-1])  # also PRAGMA integrity_check
        cut_mid_commit += head == acks[-1] + 1
        last_ack = head

    # Cuts threw writes away (a cut between two commits has nothing unsynced to lose, so
    # not every one does); had none, the shim would have tested nothing.
    assert discarded > 0, f"no unsynced write discarded in {CUTS} cuts"
    assert last_ack >= CUTS
    print(
        f"{CUTS} power cuts, {last_ack} steps, {discarded} unsynced writes discarded, "
        f"{cut_mid_commit} cuts after a commit was durable but before its ACK, seed {seed}"
    )


GROUP_RUNS = 4


@pytest.mark.crash
def test_power_loss_under_async_group_commit_loses_no_acknowledged_step(
    shim: Path, tmp_path: Path
) -> None:
    """The same through ``AsyncStore``: four runs of one process commit in shared batches."""
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory.resolve()}/runs.db"
    with Store.connect(url) as store:
        runs = [str(store.create_run(agent_id=f"group-{i}").run_id) for i in range(GROUP_RUNS)]

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last = dict.fromkeys(runs, 0)
    discarded = 0
    for cut in range(CUTS):
        where = f"seed {seed}, cut {cut}"
        journal = tmp_path / f"journal-{cut}"
        lines = run_until_cut(
            [sys.executable, str(WRITER), "--group", url, *runs],
            shim_env(shim, directory, journal),
            rng,
            tmp_path / f"writer-{cut}.err",
        )
        acked = group_acks(lines, last, where)
        discarded += cut_power(journal)
        for run in runs:
            steps = acked[run]
            assert steps == list(range(last[run] + 1, last[run] + 1 + len(steps))), where
            if not steps and last[run] == 0:
                continue  # cut before this run's first commit was acknowledged
            last[run] = verify(url, run, steps[-1] if steps else last[run], tag=run)
    assert discarded > 0, f"no unsynced write discarded in {CUTS} cuts"
    assert all(step > 0 for step in last.values())


CONTROL = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=OFF")
n = conn.execute("SELECT count(*) FROM t").fetchone()[0]
print(f"START {n}", flush=True)
while True:
    n += 1
    conn.execute("INSERT INTO t VALUES (?, ?)", (n, "x" * 500))
    print(f"ACK {n}", flush=True)
"""


@pytest.mark.crash
def test_the_cut_loses_acknowledged_commits_without_fsync(shim: Path, tmp_path: Path) -> None:
    """The control: with synchronous=OFF nothing is synced, so a cut loses what was
    acknowledged, yet the file stays consistent (WAL frames are checksummed)."""
    directory = tmp_path / "db"
    directory.mkdir()
    path = directory / "control.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, pad TEXT)")
        conn.commit()
    script = tmp_path / "control.py"
    script.write_text(CONTROL)
    rng = random.Random(0)
    lost = 0
    for cut in range(3):
        journal = tmp_path / f"journal-{cut}"
        lines = run_until_cut(
            [sys.executable, str(script), str(path)],
            shim_env(shim, directory, journal),
            rng,
            tmp_path / f"control-{cut}.err",
        )
        acks = [int(line.split()[-1]) for line in lines if line.startswith("ACK ")]
        assert acks
        assert cut_power(journal) > 0
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            (count,) = conn.execute("SELECT count(*) FROM t").fetchone()
        lost += acks[-1] - count
    assert lost > 0, "the cut discarded no acknowledged commit: it simulates nothing"


RUN_STEPS = 300


def run_agent(url: str, run_id: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUN_AGENT), url, run_id, str(RUN_STEPS), "--owner", "worker-1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else dict(os.environ),
    )


def final_state(lines: list[str]) -> Any:
    return json.loads(next(line for line in lines if line.startswith("FINAL "))[6:])


@pytest.mark.crash
def test_power_loss_under_the_run_loop_resumes_to_the_uncrashed_result(
    shim: Path, tmp_path: Path
) -> None:
    """Row 4 with row 25: an ``AgentRun`` (effects, blobs, snapshots) cut off by power
    cuts at random moments, resumed each time by the same worker, ends in exactly the
    state of a run that was never cut, and loses no acknowledged step on the way."""
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory.resolve()}/runs.db"
    reference = run_agent(url, str(uuid.uuid4()))
    out, err = reference.communicate(timeout=240)
    assert reference.returncode == 0, err
    expected = final_state(out.splitlines())

    run_id = str(uuid.uuid4())
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last = 0
    cuts = 0
    discarded = 0
    while cuts < CUTS:
        where = f"seed {seed}, cut {cuts}, last COMMITTED {last}"
        journal = tmp_path / f"journal-{cuts}"
        child = run_agent(url, run_id, shim_env(shim, directory, journal))
        assert child.stdout is not None
        lines = []
        for line in child.stdout:  # up to the first new commit
            lines.append(line.rstrip("\n"))
            if line.startswith(("COMMITTED", "FINAL")):
                break
        time.sleep(rng.uniform(0.0, 0.1))
        child.send_signal(signal.SIGKILL)
        lines.extend(child.stdout.read().splitlines())
        child.stdout.close()
        child.wait(timeout=30)
        assert child.stdin is not None
        assert child.stderr is not None
        child.stdin.close()
        errors = child.stderr.read()
        child.stderr.close()
        if child.returncode == 0:
            break  # it finished before the cut
        assert child.returncode == -signal.SIGKILL, (child.returncode, lines, errors, where)
        committed = [int(line.split()[1]) for line in lines if line.startswith("COMMITTED")]
        discarded += cut_power(journal)
        cuts += 1
        with Store.connect(url, migrate=False) as store:
            try:
                latest = store.latest(run_id)
            except RunNotFoundError:  # the cut took the run itself
                latest = None
            head = 0 if latest is None else latest.step
        acked = committed[-1] if committed else last
        assert head >= acked, f"step {acked} was acknowledged, the head is {head} ({where})"
        with closing(sqlite3.connect(directory / "runs.db")) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        last = head

    rest = run_agent(url, run_id)
    out, err = rest.communicate(timeout=240)
    assert rest.returncode == 0, err
    assert final_state(out.splitlines()) == expected, f"seed {seed}"
    assert cuts == 0 or discarded > 0
    print(f"run loop: {cuts} power cuts, {discarded} unsynced writes discarded, seed {seed}")


CONVERSATION_TURNS = 60


@pytest.mark.crash
def test_power_loss_under_a_streaming_conversation_keeps_every_durable_event(
    shim: Path, tmp_path: Path
) -> None:
    """Row 4 through the conversation API: ``conversation_agent.py`` streams turns (user
    message, flushed partial reply, tool call, sealed turn) and prints each event once it
    is durable; after each cut every printed event is in the recovered conversation, and
    the conversation finished after the cuts holds exactly an uncut run's messages."""
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory.resolve()}/conversations.db"
    cid = str(uuid.uuid4())
    agent = [sys.executable, str(CONVERSATION_AGENT), url, cid, str(CONVERSATION_TURNS)]
    expected = expected_messages(CONVERSATION_TURNS)
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    discarded = 0
    for cut in range(CUTS):
        where = f"seed {seed}, cut {cut}"
        journal = tmp_path / f"journal-{cut}"
        child = subprocess.Popen(
            agent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=shim_env(shim, directory, journal),
        )
        assert child.stdout is not None
        assert child.stdin is not None
        lines = [child.stdout.readline().strip()]  # the first durable event
        time.sleep(rng.uniform(0.0, 0.05))
        child.send_signal(signal.SIGKILL)
        lines.extend(line.strip() for line in child.stdout.read().splitlines())
        child.stdout.close()
        child.stdin.close()
        child.wait(timeout=30)
        if "FINISHED" in lines:
            break
        discarded += cut_power(journal)
        with Store.connect(url) as store:
            recovery = Conversations(store).recover(cid, agent_config=CONFIG, tools=TOOLS)
        stored = [m.to_json() for m in recovery.messages]
        for event in lines:
            words = event.split()
            if not words:
                continue
            turn = int(words[1])
            if words[0] == "USER":  # the user message of the turn is durable
                assert stored[2 * turn - 2] == expected[2 * turn - 2], (event, where)
            elif words[0] == "DONE":  # the whole turn is durable and sealed
                assert stored[: 2 * turn] == expected[: 2 * turn], (event, where)
        with closing(sqlite3.connect(directory / "conversations.db")) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

    done = subprocess.run(agent, capture_output=True, text=True, timeout=240, check=True)
    assert done.stdout.strip().endswith("FINISHED")
    with Store.connect(url) as store:
        recovery = Conversations(store).recover(cid, agent_config=CONFIG, tools=TOOLS)
    assert [m.to_json() for m in recovery.messages] == expected, f"seed {seed}"
    assert discarded > 0
    print(f"conversation: {CUTS} power cuts, {discarded} unsynced writes discarded, seed {seed}")


SESSION_WRITER = Path(__file__).with_name("session_writer.py")
LANGGRAPH_WRITER = Path(__file__).with_name("langgraph_put_writer.py")


def power_cuts(
    shim: Path,
    tmp_path: Path,
    database: str,
    writer: list[str],
    check: Callable[[str, list[int], str], int],
) -> tuple[int, int]:
    """Cut the power CUTS times under ``writer`` (a script and its arguments after the
    URL; it prints ``START n``, then ``ACK n`` for each durable write) on a fresh SQLite
    file ``database``. After each cut ``check(url, acks, where)`` verifies what a fresh
    reader finds and returns the writer's new head; the file must pass
    ``PRAGMA integrity_check``. Returns the last head and the unsynced writes discarded."""
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory.resolve()}/{database}"
    Store.connect(url).close()  # the schema, made outside the shim
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    last = 0
    discarded = 0
    for cut in range(CUTS):
        where = f"seed {seed}, cut {cut}, last ACK {last}"
        journal = tmp_path / f"journal-{cut}"
        lines = run_until_cut(
            [sys.executable, writer[0], url, *writer[1:]],
            shim_env(shim, directory, journal),
            rng,
            tmp_path / f"writer-{cut}.err",
        )
        assert lines[0] == f"START {last}", f"resumed elsewhere ({where}): {lines[:3]}"
        acks = [int(line.split()[-1]) for line in lines if line.startswith("ACK ")]
        assert acks == list(range(last + 1, acks[-1] + 1)), where
        discarded += cut_power(journal)
        last = check(url, acks, where)
        with closing(sqlite3.connect(directory / database)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)], where
    assert discarded > 0, f"no unsynced write discarded in {CUTS} cuts"
    assert last >= CUTS
    return last, discarded


@pytest.mark.crash
def test_power_loss_under_an_agents_sdk_session_loses_no_acknowledged_item(
    shim: Path, tmp_path: Path
) -> None:
    """The OpenAI Agents SDK session (``session_writer.py``: one ``add_items`` a line,
    ``ACK n`` once it returned) under the same cuts: after each, a fresh session holds
    exactly the items up to the last acknowledged one (or one more: durable, cut before
    its ACK), and the file passes ``PRAGMA integrity_check``."""
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from tests.crash.session_writer import item
    from tests.crash.test_session import read_items

    def check(url: str, acks: list[int], where: str) -> int:
        items = read_items(url, "power-session")
        head = len(items)
        assert head in (acks[-1], acks[-1] + 1), f"{head} items after ACK {acks[-1]} ({where})"
        assert items == [item(n) for n in range(1, head + 1)], where
        return head

    writer = [str(SESSION_WRITER), "power-session"]
    last, discarded = power_cuts(shim, tmp_path, "session.db", writer, check)
    print(f"{CUTS} power cuts, {last} session items, {discarded} unsynced writes discarded")


@pytest.mark.crash
def test_power_loss_under_the_langgraph_saver_loses_no_acknowledged_checkpoint(
    shim: Path, tmp_path: Path
) -> None:
    """``AgentckptSaver`` (``langgraph_put_writer.py``: a ``put`` and a ``put_writes`` a
    checkpoint, ``ACK n`` after both) under the same cuts: after each, the thread lists
    exactly the checkpoints up to the last acknowledged one (or one more), each with its
    values, its parent and, when acknowledged, its pending write."""
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    from agentckpt.integrations.langgraph import AgentckptSaver
    from tests.crash.langgraph_put_writer import checkpoint_id, thread_config, values

    # A checkpoint durable but cut before its put_writes and ACK stays without its write:
    # the next writer goes on after it.
    acknowledged: set[int] = set()

    def check(url: str, acks: list[int], where: str) -> int:
        acknowledged.update(acks)
        with AgentckptSaver.from_url(url) as saver:
            stored = list(saver.list(thread_config("power-thread")))
        head = len(stored)
        assert head in (acks[-1], acks[-1] + 1), f"{head} checkpoints after ACK {acks[-1]}"
        for got, n in zip(stored, range(head, 0, -1), strict=True):
            assert got.checkpoint["id"] == checkpoint_id(n), where
            assert got.checkpoint["channel_values"] == values(n), where
            parent = None if n == 1 else thread_config("power-thread", n - 1)
            assert got.parent_config == parent, where
            if n in acknowledged:
                assert got.pending_writes == [(f"task-{n}", "log", f"pending {n}")], where
        return head

    writer = [str(LANGGRAPH_WRITER), "power-thread"]
    last, discarded = power_cuts(shim, tmp_path, "graph.db", writer, check)
    print(f"{CUTS} power cuts, {last} checkpoints, {discarded} unsynced writes discarded")
