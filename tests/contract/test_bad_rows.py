"""A stored step made undecodable by raw SQL (reliability rows 19 and 20, read side).

Rows another client wrote, or that a disk or an operator damaged: bytes that are not
UTF-8, JSON nested 5000 levels deep, numbers past what Python reads (``1e5000``, a
5001-digit integer), ``NaN``, and JSON that parses but is not what was committed
(``1e-400``, which reads as 0.0, and a duplicate key). Each read of the damaged step is a
:class:`CorruptDataError` naming the run and the step, never a ``RecursionError``, a
``ValueError`` or a silent 0.0; the run's other steps, other runs, and the run loop and
conversation API on other runs still work.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import CorruptDataError, SnapshotPolicy, Store
from agentckpt.conversation import Conversations
from agentckpt.runs import AgentRun
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql

KEEP_ALL = SnapshotPolicy(interval=1, prune=False)  # every step a snapshot, all kept

DAMAGE: dict[str, bytes] = {
    "not-utf8": b"\xff\xfe not utf-8",
    "depth-5000": b"[" * 5000 + b"]" * 5000,
    "1e5000": b'{"n":1e5000}',
    "5001-digit-int": b'{"n":1' + b"0" * 5000 + b"}",
    "nan": b'{"n":NaN}',
    "1e-400": b'{"n":1e-400}',  # parses, as 0.0: the checksum tells
    "duplicate-key": b'{"n":0,"n":0}',  # parses, as {"n": 0}: not the bytes committed
    "truncated": b'{"n":',
}


def damage(url: str, run_id: Any, step: int, payload: bytes) -> None:
    changed = run_sql(
        url,
        "UPDATE steps SET payload = ?, codec = 'json' WHERE run_id = ? AND step = ? RETURNING step",
        payload,
        str(run_id),
        step,
    )
    assert changed == [(step,)]


@pytest.mark.parametrize("payload", [pytest.param(v, id=k) for k, v in DAMAGE.items()])
def test_a_damaged_step_is_corrupt_data_naming_run_and_step(
    make_store: Any, url: str, payload: bytes
) -> None:
    store = make_store(policy=KEEP_ALL)
    hit, other = store.create_run(), store.create_run()
    for n in range(3):
        store.commit(hit.run_id, {"n": n})
        store.commit(other.run_id, {"n": n})
    damage(url, hit.run_id, 2, payload)

    reader = make_store(policy=KEEP_ALL)  # nothing cached: read from the database
    with pytest.raises(CorruptDataError) as raised:
        reader.state_at(hit.run_id, 2)
    message = str(raised.value)
    assert f"run {hit.run_id} step 2" in message, message
    # The run's undamaged steps and the other run still load, from the same store.
    assert reader.state_at(hit.run_id, 1).state == {"n": 0}
    assert reader.latest(hit.run_id).state == {"n": 2}
    assert reader.latest(other.run_id).state == {"n": 2}
    assert reader.state_at(other.run_id, 2).state == {"n": 1}
    # And the store still writes.
    assert reader.commit(other.run_id, {"n": 3}).step == 4


def test_a_damaged_head_stops_its_run_loop_and_no_other(url: str) -> None:
    with Store.connect(url) as store:
        loop = AgentRun(store, agent_id="a", name="hit", initial_state={"n": 0})
        loop.run(lambda ctx: {"n": ctx.state["n"] + 1}, max_steps=2)
        head = store.get_run(loop.run_id).head_step
        assert head is not None
        damage(url, loop.run_id, head, DAMAGE["depth-5000"])

    with Store.connect(url) as store:
        resumed = AgentRun(store, agent_id="a", name="hit")
        with pytest.raises(CorruptDataError, match=f"run {loop.run_id} step {head}"):
            resumed.run(lambda ctx: ctx.state, max_steps=4)
        fine = AgentRun(store, agent_id="a", name="fine", initial_state={"n": 0})
        assert fine.run(lambda ctx: {"n": ctx.state["n"] + 1}, max_steps=2).step == 2


def test_a_damaged_conversation_is_corrupt_data_and_others_recover(url: str) -> None:
    with Store.connect(url) as store:
        conversations = Conversations(store)
        hit = conversations.start(agent_id="w", agent_config=CONFIG, tools=TOOLS)
        hit.add_user_message("q")
        hit.add_assistant_message("a")
        fine = conversations.start(agent_id="w", agent_config=CONFIG, tools=TOOLS)
        fine.add_user_message("kept")
        head = store.get_run(hit.conversation_id).head_step
        assert head is not None
        damage(url, hit.conversation_id, head, DAMAGE["5001-digit-int"])

    with Store.connect(url) as store:
        conversations = Conversations(store)
        with pytest.raises(CorruptDataError, match=f"run {hit.conversation_id} step {head}"):
            conversations.recover(hit.conversation_id, agent_config=CONFIG, tools=TOOLS)
        got = conversations.recover(fine.conversation_id, agent_config=CONFIG, tools=TOOLS)
        assert [m.content for m in got.messages] == ["kept"]
