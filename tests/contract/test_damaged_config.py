"""One run with undecodable config bytes: listing names it and still lists the others;
reading it is a CorruptDataError naming the run (issue 12: list_runs failed for the whole
store with a message that named no run)."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import CorruptDataError
from tests.support.dbsql import run_sql


def test_a_damaged_config_is_reported_not_fatal(make_store: Any, url: str) -> None:
    store = make_store()
    good = store.create_run(agent_id="a", config={"model": "m"})
    bad = store.create_run(agent_id="a", config={"model": "m"})
    run_sql(url, "UPDATE runs SET config = ? WHERE run_id = ?", b"\xff{not json", str(bad.run_id))

    listed = {run.run_id: run for run in store.list_runs()}
    assert set(listed) == {good.run_id, bad.run_id}
    assert listed[good.run_id].config == {"model": "m"}
    assert listed[good.run_id].config_error is None
    assert listed[bad.run_id].config == {}
    assert str(bad.run_id) in (listed[bad.run_id].config_error or "")
    with pytest.raises(CorruptDataError, match=str(bad.run_id)):
        store.get_run(bad.run_id)
    assert store.get_run(good.run_id).config == {"model": "m"}
