"""Real crashes: a child process streaming a conversation is killed with SIGKILL at
chosen and at arbitrary moments; a new process recovers it exactly and finishes it.

The child (``crash_agent.py``) prints each event once it is durable; with a pause point
it stops right after printing it, so the test knows exactly what must have survived.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.conversation import Conversations
from tests.crash.conversation_agent import (
    CONFIG,
    TOOLS,
    chunks_before,
    expected_messages,
    user_text,
)

AGENT = Path(__file__).with_name("conversation_agent.py")
TURNS = 5

pytestmark = pytest.mark.crash


def spawn(url: str, cid: uuid.UUID, pause_at: str | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, str(AGENT), url, str(cid), str(TURNS)]
    if pause_at:
        args.append(pause_at)
    return subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def kill_at(url: str, cid: uuid.UUID, event: str) -> list[str]:
    """Run the child until it has printed ``event``, then SIGKILL it; its output."""
    with spawn(url, cid, event) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        seen = []
        for line in child.stdout:
            seen.append(line.strip())
            if seen[-1] == event:
                break
        else:
            child.wait()
            pytest.fail(f"child ended before {event!r}: {seen} {child.stderr.read()}")
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    return seen


def kill_after_lines(url: str, cid: uuid.UUID, lines: int) -> list[str]:
    """Let the child run free and SIGKILL it after ``lines`` events, wherever it is."""
    with spawn(url, cid) as child:
        assert child.stdout is not None
        seen = []
        for line in child.stdout:
            seen.append(line.strip())
            if len(seen) == lines:
                child.send_signal(signal.SIGKILL)
                break
        child.wait()
    return seen


def recover(url: str, cid: uuid.UUID) -> Any:
    """Recover in this process, on a fresh connection: not the one that wrote."""
    with Store.connect(url) as store:
        return Conversations(store).recover(cid, agent_config=CONFIG, tools=TOOLS)


def as_json(messages: list[Any]) -> str:
    return json.dumps([m.to_json() for m in messages])


def test_sigkill_at_chosen_points_then_resume_exactly(url: str) -> None:
    cid = uuid.uuid4()
    expected = expected_messages(TURNS)

    # Between turns: both turns sealed, nothing pending.
    kill_at(url, cid, "DONE 2")
    state = recover(url, cid)
    assert (state.step, state.pending) == (2, None)
    assert as_json(state.messages) == json.dumps(expected[:4])

    # Right after the user's message of turn 3: durable, the turn is pending.
    kill_at(url, cid, "USER 3")
    state = recover(url, cid)
    assert state.pending is not None
    assert state.pending.turn == 3
    assert state.pending.user_message.content == user_text(3)
    assert state.pending.partial == []
    assert as_json(state.messages) == json.dumps(expected[:5])

    # Mid-stream: the resumed child replays turn 3; the flushed partial text is there.
    kill_at(url, cid, "FLUSH 3 2")
    state = recover(url, cid)
    assert state.pending is not None
    assert state.pending.turn == 3
    [partial] = state.pending.partial
    assert partial.content == "".join(chunks_before(3)[:3])
    assert partial.tool_calls is None
    assert as_json(state.messages[:5]) == json.dumps(expected[:5])

    # After the tool result: the finished call survived with its result.
    kill_at(url, cid, "TOOL 4")
    state = recover(url, cid)
    assert state.pending is not None
    assert state.pending.turn == 4
    [partial] = state.pending.partial
    assert partial.content == "".join(chunks_before(4))
    assert partial.tool_calls[0].to_json() == expected[7]["tool_calls"][0]
    assert as_json(state.messages[:7]) == json.dumps(expected[:7])
    assert state.dangling == []

    # The last run finishes; the conversation equals one that never crashed.
    finished = subprocess.run(
        [sys.executable, str(AGENT), url, str(cid), str(TURNS)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert finished.stdout.strip().endswith("FINISHED")
    state = recover(url, cid)
    assert state.pending is None
    assert state.step == TURNS
    assert as_json(state.messages) == json.dumps(expected)
    assert state.state.metadata.input_tokens is not None


@pytest.mark.parametrize("lines", [1, 3, 6])
def test_sigkill_anywhere_leaves_a_consistent_prefix(url: str, lines: int) -> None:
    cid = uuid.uuid4()
    expected = expected_messages(TURNS)
    kill_after_lines(url, cid, lines)
    state = recover(url, cid)
    done = len(state.messages) if state.pending is None else state.pending.start
    assert as_json(state.messages[:done]) == json.dumps(expected[:done])
    if state.pending is not None:
        assert state.messages[state.pending.start].to_json() == expected[state.pending.start]
        for message in state.pending.partial:  # a prefix of the reply being streamed
            full = expected[state.pending.start + 1]["content"]
            assert full.startswith(message.content)
        assert all(c.has_result for m in state.model_messages for c in m.tool_calls or ())
    kill_after_lines(url, cid, lines)  # a second crash, in the resumed process
    subprocess.run(
        [sys.executable, str(AGENT), url, str(cid), str(TURNS)],
        capture_output=True,
        check=True,
    )
    assert as_json(recover(url, cid).messages) == json.dumps(expected)


def test_a_recovery_worker_replays_the_turn_a_sigkill_cut_off(url: str) -> None:
    """Killed mid-reply (SIGKILL after a flush of turn 3): a ConversationRecoveryWorker in
    another process claims the conversation and answers turn 3's user message again."""
    from agentckpt._backends.factory import parse_url
    from agentckpt.conversation import ConversationRecoveryWorker
    from tests.support.dbsql import run_sql

    cid = uuid.uuid4()
    expected = expected_messages(TURNS)
    kill_at(url, cid, "FLUSH 3 2")
    past = (
        "strftime('%Y-%m-%dT%H:%M:%f', 'now', '-120 seconds')"
        if parse_url(url).dialect == "sqlite"
        else "now() - interval '120 seconds'"
    )
    # The dead writer's silence, without waiting idle_seconds for it.
    run_sql(url, f"UPDATE runs SET heartbeat_at = {past} WHERE run_id = ?", str(cid))

    seen: list[str] = []

    def answer(conv: Any) -> int:
        seen.append(conv.messages[-1].content)
        return conv.add_assistant_message("answered after the crash", timestamp="T").step

    with Store.connect(url) as store:
        worker = ConversationRecoveryWorker(Conversations(store), idle_seconds=60)
        worker.register("crash-agent", answer, agent_config=CONFIG, tools=TOOLS)
        recovered = worker.recover_once()
    assert [(r.conversation_id, r.error, r.result) for r in recovered] == [(cid, None, 3)]
    assert seen == [user_text(3)]
    state = recover(url, cid)
    assert state.pending is None
    assert as_json(state.messages[:5]) == json.dumps(expected[:5])
    assert [m.content for m in state.messages[5:]] == ["answered after the crash"]
