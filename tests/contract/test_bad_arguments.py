"""Bad arguments are refused with an InvalidValueError naming the argument, on both
backends alike, before anything is written (issue 12: some raised TypeError or
UnicodeEncodeError, some were accepted, NUL in agent_id differed per backend)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentckpt import InvalidValueError
from tests.support.dbsql import run_sql

# (id, call on a store with an existing run's id, the argument the error must name)
BAD: list[tuple[str, Callable[[Any, Any], Any], str]] = [
    ("agent_id-int", lambda s, r: s.create_run(agent_id=5), "agent_id"),
    ("agent_id-nul", lambda s, r: s.create_run(agent_id="a\x00b"), "agent_id"),
    ("agent_id-surrogate", lambda s, r: s.create_run(agent_id="a\ud800"), "agent_id"),
    ("kind-list", lambda s, r: s.create_run(kind=["x"]), "kind"),
    ("kind-nul", lambda s, r: s.create_run(kind="r\x00"), "kind"),
    ("config-list", lambda s, r: s.create_run(config=[1]), "config"),
    ("config-int", lambda s, r: s.create_run(config=5), "config"),
    ("metadata-2**64", lambda s, r: s.create_run(metadata={"n": 2**64}), "metadata"),
    ("metadata-list", lambda s, r: s.create_run(metadata=[1]), "metadata"),
    ("claim_after", lambda s, r: s.create_run(claim_after=-1), "claim_after"),
    ("status-int", lambda s, r: s.set_status(r, 5), "status"),
    ("status-surrogate", lambda s, r: s.set_status(r, "\udfff"), "status"),
    ("error-int", lambda s, r: s.set_status(r, "failed", error=5), "error"),
    ("list-kind", lambda s, r: s.list_runs(kind=["x"]), "kind"),
    ("list-agent_id", lambda s, r: s.list_runs(agent_id=5), "agent_id"),
    ("list-status", lambda s, r: s.list_runs(status=b"active"), "status"),
    ("list-limit", lambda s, r: s.list_runs(limit="10"), "limit"),
    ("commit-metadata", lambda s, r: s.commit(r, {}, metadata={"n": 2**64}), "metadata"),
]


@pytest.mark.parametrize(("call", "argument"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_argument_is_a_typed_error_naming_it(
    make_store: Any, url: str, call: Callable[[Any, Any], Any], argument: str
) -> None:
    store = make_store()
    run = store.create_run(agent_id="kept")
    before = run_sql(url, "SELECT run_id, status, head_step, metadata FROM runs")
    with pytest.raises(InvalidValueError, match=argument):
        call(store, run.run_id)
    assert run_sql(url, "SELECT run_id, status, head_step, metadata FROM runs") == before
    assert store.get_run(run.run_id).status == "active"  # the store is still usable
