"""The optional audit log: raw events appended off the hot path, never failing a commit."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.ops.exchange import export_runs, import_runs
from agentckpt.runs import AuditLog
from tests.integration.runs.conftest import Runs
from tests.support.runs import counter_state, counter_step


def test_the_run_loop_writes_raw_step_events(runs: Runs) -> None:
    audit = runs.audit_log(runs.check if runs.flavor == "sync" else None)

    def step(ctx: Any) -> Any:
        ctx.emit("llm.response", {"text": f"thought {ctx.step}"})
        return counter_step(ctx)

    run = runs.agent_run(initial_state=counter_state(), audit=audit)
    run.run(step, max_steps=2)
    runs.do(audit.close())

    events = runs.do(audit.events(run.run_id))
    kinds = [(e.kind, e.step) for e in events]
    assert ("run.started", None) in kinds
    assert ("step.committed", 0) in kinds
    assert ("llm.response", 1) in kinds
    assert ("step.committed", 2) in kinds
    assert ("run.completed", 2) in kinds
    committed = next(e for e in events if e.kind == "step.committed" and e.step == 2)
    assert committed.data["state"]["seen"] == [1, 2]  # the raw state of the step
    assert committed.data["parent_step"] == 1
    response = next(e for e in events if e.kind == "llm.response")
    assert response.data == {"text": "thought 1"}
    assert (audit.written, audit.dropped, audit.failed) == (len(events), 0, 0)


def _start(runs: Runs, audit: Any) -> None:
    """Start the log's writer where it runs: here (sync) or on the test's loop (async)."""
    if runs.flavor == "sync":
        audit.start()
        return

    async def begin() -> None:
        audit.start()

    runs.do(begin())


def test_events_come_back_in_emission_order(runs: Runs, tmp_path: Path) -> None:
    """Events of one step share a batch (one created_at on PostgreSQL) and have random
    ids; they still come back in the order emitted (issue 12)."""
    audit = runs.audit_log(start=False)  # all queued first: one batch, one transaction

    def step(ctx: Any) -> Any:
        for n in range(20):
            ctx.emit("llm.chunk", {"n": n})
        return counter_step(ctx)

    run = runs.agent_run(initial_state=counter_state(), audit=audit)
    run.run(step, max_steps=2)
    _start(runs, audit)
    runs.do(audit.close())
    events = runs.do(audit.events(run.run_id))
    expected = (
        [("run.started", None), ("step.committed", 0)]
        + [("llm.chunk", 1)] * 20
        + [("step.committed", 1)]
        + [("llm.chunk", 2)] * 20
        + [("step.committed", 2), ("run.completed", 2)]
    )
    assert [(e.kind, e.step) for e in events] == expected
    chunks = [e.data["n"] for e in events if e.kind == "llm.chunk"]
    assert chunks == list(range(20)) * 2

    # An export writes them in that order and an import keeps it.
    out = io.StringIO()
    export_runs(runs.check, [run.run_id], out)
    with Store.connect(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        import_runs(copy, out.getvalue().splitlines())
        copied = AuditLog(copy).events(run.run_id)
        assert [(e.kind, e.step, e.data) for e in copied] == [
            (e.kind, e.step, e.data) for e in events
        ]


def test_a_broken_audit_writer_never_fails_or_blocks_a_commit(
    runs: Runs, caplog: pytest.LogCaptureFixture
) -> None:
    runs.sql("DROP TABLE events")  # every audit write now fails in the database
    audit = runs.audit_log()
    run = runs.agent_run(initial_state=counter_state(), audit=audit)
    with caplog.at_level(logging.ERROR, logger="agentckpt.runs"):
        result = run.run(counter_step, max_steps=3)
        runs.do(audit.close())  # lets the writer try every queued event

    assert (result.status, result.step) == ("completed", 3)
    assert runs.check.latest(run.run_id).step == 3
    assert audit.written == 0
    assert audit.failed == 6  # started, 4 commits, completed: each lost and counted
    assert any("failed" in r.getMessage() for r in caplog.records)


def test_a_full_queue_drops_and_counts_instead_of_waiting(runs: Runs) -> None:
    audit = runs.audit_log(start=False, maxsize=2)  # nobody drains it yet
    run = runs.agent_run(initial_state=counter_state(), audit=audit)
    run.run(counter_step, max_steps=3)
    assert audit.dropped > 0
    assert audit.written == 0


def test_an_unstorable_event_is_refused_not_raised(runs: Runs) -> None:
    audit = runs.audit_log()
    assert audit.emit("0b9ea8b1-2f6b-4c4e-9d5c-3f2a1b0c9d8e", "bad", {"when": {1, 2}}) is False
    assert audit.failed == 1
