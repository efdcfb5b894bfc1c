"""``agentckpt migrate-states``: stored states upgraded to the current version, each as
a guarded commit; runs that move meanwhile or are leased are conflicts, never overwritten."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentckpt import AgentRun, StateMigrations, Store
from tests.support.sample_store import cli

# The application's own migrations for runs of kind "run", in an importable module: the
# version 1 -> 2 upgrade adds "tags". A state holding "move_me" makes the upgrade commit
# to its run through another store first: a writer that moves the run while the command
# holds the state it read.
JOB_STATES = """
from agentckpt import StateMigrations, Store

def upgrade(state):
    if "move_me" in state:
        with Store.connect(state.pop("move_me")) as other:
            other.commit(state.pop("run_id"), {"n": 99, "moved": True})
    return {**state, "tags": []}

def migrations():
    m = StateMigrations(current=2)
    m.add(1, upgrade)
    return m
"""
JOBS = "run=job_states:migrations"
# No upgrade at all: states are read as stored.
RAW = StateMigrations(key="no such key")


def v1_conversation(text: str) -> dict[str, Any]:
    """A state in the seed's first format: no version key, no tool registry."""
    return {
        "conversation": [
            {"role": "user", "content": text},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [{"tool_name": "get_weather", "arguments": {}, "result": 1}],
            },
        ],
        "agent_config": {"model": "m"},
        "metadata": {},
    }


@dataclass
class Runs:
    sealed: list[uuid.UUID]
    open_turn: uuid.UUID
    current: uuid.UUID
    job: uuid.UUID
    other_agent: uuid.UUID


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "job_states.py").write_text(JOB_STATES)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("job_states", None)
    sys.path[:] = [p for p in sys.path if p != str(tmp_path)]


def populate(url: str) -> Runs:
    with Store.connect(url) as store:
        sealed = []
        for n in range(3):
            run = store.create_run(agent_id="weather", kind="conversation")
            store.commit(run.run_id, v1_conversation(f"hello {n}"))
            store.commit(run.run_id, v1_conversation(f"hello {n}, again"))
            sealed.append(run.run_id)
        open_turn = store.create_run(agent_id="weather", kind="conversation").run_id
        store.commit(open_turn, v1_conversation("pending"), keep_open=True)
        current = store.create_run(agent_id="weather", kind="conversation").run_id
        store.commit(current, {"version": 2, **v1_conversation("new"), "tool_registry": []})
        job = store.create_run(agent_id="worker", kind="run").run_id
        store.commit(job, {"n": 1})
        other = store.create_run(agent_id="other", kind="conversation").run_id
        store.commit(other, v1_conversation("elsewhere"))
    return Runs(sealed, open_turn, current, job, other)


def heads(url: str) -> dict[uuid.UUID, tuple[int | None, bool, Any]]:
    with Store.connect(url, migrate=False, migrations=RAW) as store:
        out = {}
        for run in store.list_runs(limit=1000):
            latest = store.latest(run.run_id)
            out[run.run_id] = (
                run.head_step,
                run.head_open,
                latest.state if latest else None,
            )
        return out


def test_dry_run_lists_every_old_state_and_writes_nothing(
    url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = populate(url)
    before = heads(url)
    code, out, err = cli(
        capsys, "--url", url, "migrate-states", "--migrations", JOBS, "--dry-run", "--json"
    )
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["dry_run"] is True
    would = {r["run_id"]: r for r in report["would_upgrade"]}
    assert set(would) == {
        str(r) for r in [*runs.sealed, runs.open_turn, runs.job, runs.other_agent]
    }
    assert would[str(runs.sealed[0])] == {
        "run_id": str(runs.sealed[0]),
        "kind": "conversation",
        "agent_id": "weather",
        "step": 2,
        "from_version": 1,
        "to_version": 2,
        "new_step": 3,
    }
    assert would[str(runs.open_turn)]["new_step"] == 1  # rewritten in place
    assert would[str(runs.job)]["to_version"] == 2
    assert report["conflicts"] == []
    assert report["failed"] == []
    assert heads(url) == before

    code, out, _ = cli(capsys, "--url", url, "migrate-states", "--dry-run")
    assert code == 0
    assert out.splitlines()[-1] == (
        "would upgrade 5 states, 0 already current, 0 conflicts, 0 failed (5 runs looked at)"
    )
    assert heads(url) == before


def test_upgrades_each_state_as_a_new_step_then_finds_nothing(
    url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = populate(url)
    before = heads(url)
    code, out, err = cli(capsys, "--url", url, "migrate-states", "--migrations", JOBS, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert len(report["upgraded"]) == 6
    assert report["already_current"] == 0  # the SQL finds only old heads

    after = heads(url)
    for rid in [*runs.sealed, runs.other_agent]:
        step, is_open, state = after[rid]
        assert (step, is_open) == (before[rid][0] + 1, False)  # one new sealed step
        assert state["version"] == 2
        assert state["tool_registry"] == ["get_weather"]
        assert state["conversation"] == before[rid][2]["conversation"]
    step, is_open, state = after[runs.open_turn]
    assert (step, is_open, state["version"]) == (1, True, 2)  # still pending, upgraded
    assert after[runs.current] == before[runs.current]
    assert after[runs.job][2] == {"n": 1, "tags": [], "version": 2}
    with Store.connect(url, migrate=False) as store:
        # A step like any other, recording the version it stores.
        assert store.steps(runs.sealed[0])[-1].state_version == 2

    code, out, _ = cli(capsys, "--url", url, "migrate-states", "--migrations", JOBS)
    assert code == 0
    assert out == "upgraded 0 states, 0 already current, 0 conflicts, 0 failed (0 runs looked at)\n"
    assert heads(url) == after


def test_filters_select_runs(
    sqlite_url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = populate(sqlite_url)
    code, out, _ = cli(capsys, "--url", sqlite_url, "migrate-states", "--agent", "other", "--json")
    assert code == 0
    assert [r["run_id"] for r in json.loads(out)["upgraded"]] == [str(runs.other_agent)]

    code, out, _ = cli(
        capsys,
        "--url",
        sqlite_url,
        "migrate-states",
        "--migrations",
        JOBS,
        "--kind",
        "run",
        "--json",
    )
    assert code == 0
    assert [r["run_id"] for r in json.loads(out)["upgraded"]] == [str(runs.job)]

    named = [str(runs.sealed[1]), str(runs.current)]
    code, out, _ = cli(capsys, "--url", sqlite_url, "migrate-states", *named, "--json")
    assert code == 0
    report = json.loads(out)
    assert [r["run_id"] for r in report["upgraded"]] == [str(runs.sealed[1])]
    assert report["already_current"] == 1
    assert heads(sqlite_url)[runs.sealed[0]][0] == 2  # not named: untouched


def test_a_run_moved_meanwhile_is_a_conflict_not_overwritten(
    url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = populate(url)
    with Store.connect(url) as store:
        store.commit(runs.job, {"n": 2, "move_me": url, "run_id": str(runs.job)})
    code, out, _ = cli(
        capsys, "--url", url, "migrate-states", "--migrations", JOBS, "--kind", "run"
    )
    assert code == 1
    assert out.splitlines()[0].startswith(f"conflict: run {runs.job}: ")
    assert "run the command again" in out.splitlines()[0]
    assert out.splitlines()[-1].startswith("upgraded 0 states, 0 already current, 1 conflicts")
    assert heads(url)[runs.job][2] == {"n": 99, "moved": True}  # the other writer's step

    code, out, _ = cli(
        capsys, "--url", url, "migrate-states", "--migrations", JOBS, "--kind", "run"
    )
    assert code == 0
    assert heads(url)[runs.job][2] == {"n": 99, "moved": True, "tags": [], "version": 2}


def test_a_leased_run_is_a_conflict_until_its_lease_ends(
    sqlite_url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.connect(sqlite_url) as store:
        rid = store.create_run(agent_id="busy").run_id
        store.commit(rid, {"n": 0})
        worker = AgentRun(store, rid, agent_id="busy", owner="worker-7")
        worker.open()  # takes the lease and keeps it alive
        try:
            code, out, _ = cli(capsys, "--url", sqlite_url, "migrate-states", "--migrations", JOBS)
            assert code == 1
            assert f"conflict: run {worker.run_id}: worker-7 holds a live lease" in out
            assert store.latest(worker.run_id).state == {"n": 0}  # type: ignore[union-attr]
        finally:
            worker.close()
        code, out, _ = cli(capsys, "--url", sqlite_url, "migrate-states", "--migrations", JOBS)
        assert code == 0
        assert store.latest(worker.run_id).state == {"n": 0, "tags": [], "version": 2}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "session"], "no state migrations for runs of kind 'session'"),
        (["--migrations", "run"], "expected KIND=MODULE:NAME"),
        (["--migrations", "run=nope_no_module:m"], "cannot import nope_no_module"),
        (["--migrations", "run=job_states:JOB"], "is not a StateMigrations"),
    ],
)
def test_bad_command_lines_exit_2_with_one_line(
    sqlite_url: str, app: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = cli(capsys, "--url", sqlite_url, "migrate-states", *argv)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("agentckpt migrate-states: error: ")
    assert message in err


def test_a_newer_state_is_reported_failed(
    sqlite_url: str, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.connect(sqlite_url) as store:
        rid = store.create_run(kind="conversation").run_id
        store.commit(rid, {"version": 3, **v1_conversation("from the future")})
    code, out, _ = cli(capsys, "--url", sqlite_url, "migrate-states", str(rid))
    assert code == 1
    assert out.splitlines()[0].startswith(f"failed: run {rid}: state has version 3, newer")
    assert out.splitlines()[-1].endswith("1 failed (1 runs looked at)")
