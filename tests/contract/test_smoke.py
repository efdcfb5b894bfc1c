from __future__ import annotations

from typing import Any


def test_commit_and_latest(store: Any) -> None:
    run = store.create_run(agent_id="a")
    state: dict[str, Any] = {"messages": []}
    for i in range(25):
        state["messages"].append({"role": "user", "content": f"m{i}"})
        store.commit(run.run_id, state)
    checkpoint = store.latest(run.run_id)
    assert checkpoint.step == 25
    assert checkpoint.state == state
