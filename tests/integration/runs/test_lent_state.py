"""A step that returns the state it was given is given that object again, not a copy:
what was stored never changes, and a failed step leaves the committed state as it was."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentckpt import NotFoundError
from tests.integration.runs.conftest import Runs


def _initial() -> dict[str, Any]:
    return {"n": 0, "plan": [1, 2, {"k": [3]}], "note": "x" * 50, "flag": False}


def _exact(state: Any) -> bytes:
    return orjson.dumps(state)


def test_the_state_a_step_returned_is_given_again_and_what_was_stored_stays(runs: Runs) -> None:
    seen: list[int] = []
    stored: list[bytes] = []

    def step(ctx: Any) -> Any:
        seen.append(id(ctx.state))
        state = ctx.state
        state["n"] += 1
        if ctx.step == 2:
            # In place, equal by == to what was there, but not the same JSON: the commit
            # must store 1.0, not keep the head's 1 (its check is against its own copy).
            state["plan"][0] = 1.0
        if ctx.step == 3:
            state["plan"][2]["k"].append(ctx.step)  # in place, deep inside a member
        stored.append(_exact(state))
        return state

    run = runs.agent_run(initial_state=_initial())
    with run:
        for info in run.steps(step, max_steps=4):
            if info.step >= 1:
                # stored[info.step - 1]: overlapped, the next step ran already.
                stored_now = runs.check.state_at(run.run_id, info.step).state
                assert _exact(stored_now) == stored[info.step - 1]

    assert len(set(seen[1:])) == 1  # from step 2 on, the object step 1 returned
    assert _exact(runs.check.latest(run.run_id).state) == stored[-1]
    assert runs.check.state_at(run.run_id, 2).state["plan"][0] == 1.0
    assert type(runs.check.state_at(run.run_id, 2).state["plan"][0]) is float


def test_a_state_kept_past_its_step_does_not_change_the_stored_one(runs: Runs) -> None:
    kept: list[Any] = []

    def step(ctx: Any) -> Any:
        if kept:
            kept[-1]["plan"].append("late")  # a reference from the step before, changed
        ctx.state["n"] += 1
        kept.append(ctx.state)
        return ctx.state

    run = runs.agent_run(initial_state=_initial())
    run.run(step, max_steps=3)

    # What each step stored is what it returned then; the late changes are the next
    # step's (the object is the same), committed with it.
    assert runs.check.state_at(run.run_id, 1).state["plan"] == [1, 2, {"k": [3]}]
    assert runs.check.state_at(run.run_id, 2).state["plan"] == [1, 2, {"k": [3]}, "late"]


@pytest.mark.parametrize("drop_head", [False, True])
def test_a_step_that_fails_after_changing_its_state_leaves_the_committed_one(
    runs: Runs, drop_head: bool
) -> None:
    def step(ctx: Any) -> Any:
        ctx.state["n"] += 1
        ctx.state["plan"].append("uncommitted")
        if ctx.step == 3:
            if drop_head:  # the store's cached head is gone (as after a refused commit)
                runs.store._forget(ctx.run_id)
            raise NotFoundError("a lookup the step needed failed")  # not the run's fault
        ctx.state["plan"].pop()
        return ctx.state

    run = runs.agent_run(initial_state=_initial())
    with run:
        with pytest.raises(NotFoundError):
            for _ in run.steps(step, max_steps=5):
                pass
        if not drop_head:  # restored from the store's head at once
            assert _exact(run.state) == _exact(runs.check.latest(run.run_id).state)
        seen: list[Any] = []

        def resumed(ctx: Any) -> Any:
            seen.append(_exact(ctx.state))
            ctx.state["n"] += 1
            return ctx.state

        run.run(resumed, max_steps=3)

    committed = runs.check.state_at(run.run_id, 2).state
    assert seen == [_exact(committed)]
    assert committed["n"] == 2
    assert "uncommitted" not in committed["plan"]
    assert runs.check.latest(run.run_id).state["n"] == 3
