"""``runs list | show | diff``, ``fork``, ``delete`` and ``prune`` on both backends."""

from __future__ import annotations

import json
import uuid

import pytest

from agentckpt import Store
from agentckpt._core.delta import apply
from tests.support.sample_store import SCRIPT, backdate, cli, populate


def test_list_filters(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    cases = {
        ("--agent", "worker"): {sample.worker},
        ("--status", "completed"): {sample.worker},
        ("--kind", "conversation"): {sample.conversation},
        ("--kind", "run"): {sample.worker, sample.empty},
        ("--older-than", "1h"): set(),
    }
    for flags, expected in cases.items():
        code, out, _ = cli(capsys, "--url", url, "runs", "list", "--ids", *flags)
        assert code == 0
        assert {uuid.UUID(line) for line in out.split()} == expected, flags
    backdate(url, sample.empty, hours=3)
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--ids", "--older-than", "2h")
    assert out.split() == [str(sample.empty)]
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--ids", "--older-than", "4h")
    assert out == ""


def test_list_table_and_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    code, out, _ = cli(capsys, "--url", url, "runs", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "RUN",
        "KIND",
        "AGENT",
        "STATUS",
        "STEP",
        "ROWS",
        "STORED",
        "UPDATED",
    ]
    assert len(lines) == 5
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--json")
    rows = {r["run_id"]: r for r in json.loads(out)["runs"]}
    conv = rows[str(sample.conversation)]
    assert conv["head_step"] == 12
    assert conv["step_rows"] == 12
    assert conv["blob_rows"] == 1
    assert conv["history_rows"] == 1
    assert conv["framework_rows"] == 3
    assert conv["rows"] == 1 + 12 + 1 + 1 + 1 + 1 + 3
    assert conv["stored_bytes"] == (
        conv["config_bytes"] + conv["step_bytes"] + conv["blob_bytes"] + conv["history_bytes"]
    )
    assert conv["bytes_per_step"] == pytest.approx(conv["stored_bytes"] / 12)
    assert rows[str(sample.empty)]["bytes_per_step"] is None
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--limit", "1", "--ids")
    assert len(out.split()) == 1


def test_show(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    code, out, _ = cli(capsys, "--url", url, "runs", "show", str(sample.conversation), "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["run"]["config"]["model"] == "llama-3-70b"
    assert shown["tool_registry"] == ["get_weather", "search_web"]
    assert shown["run"]["metadata"] == {"user_id": "user_abc123", "cost": 0.5, "input_tokens": 1200}
    assert [s["step"] for s in shown["steps"]] == list(range(1, 13))
    assert {s["kind"] for s in shown["steps"]} == {"snapshot", "delta"}
    assert shown["sizes"]["blob_rows"] == 1

    code, out, _ = cli(capsys, "--url", url, "runs", "show", str(sample.conversation))
    assert code == 0
    assert "tool registry:" in out
    assert "kept steps (12):" in out
    assert '"user_id": "user_abc123"' in out

    code, out, _ = cli(capsys, "--url", url, "runs", "show", str(sample.empty))
    assert code == 0
    assert "kept steps (0):" in out


def test_diff(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    rid = str(sample.conversation)
    code, out, _ = cli(capsys, "--url", url, "runs", "diff", rid, "4", "9", "--json")
    assert code == 0
    patch = json.loads(out)
    before = json.loads(json.dumps(_state(url, sample.conversation, 4)))
    assert apply(before, patch) == _state(url, sample.conversation, 9)

    code, out, _ = cli(capsys, "--url", url, "runs", "diff", rid, "11", "12")
    assert code == 0
    assert out.splitlines()[0] == f"run {rid}: step 11 -> step 12, 1 operation"
    assert out.splitlines()[1].startswith("+ add /conversation/-")

    code, _, err = cli(capsys, "--url", url, "runs", "diff", rid, "1", "40")
    assert code == 1
    assert f"run {rid} has no kept step 40" in err


def _state(url: str, run_id: uuid.UUID, step: int) -> object:
    from agentckpt.ops.views import stored_state

    with Store.connect(url) as store:
        found = stored_state(store, run_id, step)
    assert found is not None
    return found.state


def test_fork_delete_prune(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    rid = str(sample.conversation)
    code, out, _ = cli(capsys, "--url", url, "fork", rid, "--step", "7", "--json")
    assert code == 0
    fork = json.loads(out)
    assert fork["parent_run_id"] == rid
    assert fork["parent_step"] == 7
    assert _state(url, uuid.UUID(fork["run_id"]), 7) == _state(url, sample.conversation, 7)

    code, out, _ = cli(capsys, "--url", url, "prune", rid, "--json")
    assert code == 0
    assert json.loads(out) == [{"run_id": rid, "pruned_steps": 10}]  # snapshot at 11
    assert _state(url, sample.conversation, 12)["conversation"][0]["content"].endswith(SCRIPT)

    code, _, err = cli(capsys, "--url", url, "prune")
    assert code == 2
    assert "pass --all" in err

    missing = str(uuid.uuid4())
    code, _, err = cli(capsys, "--url", url, "delete", fork["run_id"], missing)
    assert code == 1
    assert f"no run {missing}" in err
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--ids")
    assert fork["run_id"] in out.split()  # all or nothing: the fork is still there

    code, out, _ = cli(capsys, "--url", url, "delete", fork["run_id"], rid)
    assert code == 0
    assert out.splitlines() == [f"deleted run {fork['run_id']}", f"deleted run {rid}"]
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--ids")
    assert set(out.split()) == {str(sample.worker), str(sample.empty)}
    code, out, _ = cli(capsys, "--url", url, "stats", "--json")
    tables = {t["table"]: t["rows"] for t in json.loads(out)["tables"]}
    # Everything of the deleted runs went, the framework integrations' rows too.
    assert tables == {
        "runs": 2,
        "steps": 3,
        "blobs": 0,
        "effects": 0,
        "history": 0,
        "events": 0,
        "run_threads": 0,
        "step_index": 0,
        "step_writes": 0,
    }
