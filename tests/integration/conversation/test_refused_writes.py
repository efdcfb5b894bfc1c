"""A write the store refuses leaves the handle exactly as it was, on SQLite and PostgreSQL,
sync and async: no half-open turn, no buffered content that can never be written, and the
next valid call works (or, after another writer moved the conversation, says to reopen).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentckpt import InvalidValueError, StaleHeadError
from agentckpt.conversation import ConversationOptions, Message, ToolCall, TurnError
from tests.integration.conversation.conftest import spy_commits
from tests.support.conversation import CONFIG, TOOLS, FakeClock, dump, dumps, step_rows
from tests.support.dbsql import run_sql

NAN = float("nan")
LONE = "text with a lone surrogate \ud800"
DEEP: Any = "bottom"
for _ in range(300):  # deeper than Limits.max_depth (200)
    DEEP = [DEEP]
BIG_BAD = {"rows": ["row " * 10] * 500, "score": NAN}  # over blob_threshold, not storable
# Values of the wrong type for a field the reader checks: written, they would make the
# conversation impossible to open again.
FIVE: Any = 5
TEXT: Any = "3"


def start(conversations: Any) -> Any:
    return conversations.start(agent_id="weather-agent", agent_config=CONFIG, tools=TOOLS)


def view(conv: Any) -> tuple[Any, ...]:
    """Everything a caller can see of the handle."""
    return (dump(conv.state.to_json()), conv.turn_open, conv.turn, conv.dirty)


def between_turns(conv: Any) -> None:
    conv.add_user_message("q1", timestamp="T")
    conv.add_assistant_message("a1", timestamp="T")


def in_a_turn(conv: Any) -> Any:
    """An open turn with buffered text and a running tool call; returns the call."""
    between_turns(conv)
    conv.add_user_message("q2", timestamp="T")
    conv.stream("pending ")
    return conv.start_tool_call("get_weather", {"city": "Berlin"})


Refused = Callable[[Any, Any], Any]

WHEN_CLOSED: dict[str, Refused] = {
    "user message NaN": lambda conv, _: conv.add_user_message(NAN),
    "user message lone surrogate": lambda conv, _: conv.add_user_message(LONE),
    "user message too deep": lambda conv, _: conv.add_user_message(DEEP),
    "user message extra NaN": lambda conv, _: conv.add_user_message("q", extra={"x": NAN}),
    "user message timestamp int": lambda conv, _: conv.add_user_message("q", timestamp=FIVE),
}

WHEN_OPEN: dict[str, Refused] = {
    "add_message NaN": lambda conv, _: conv.add_message(Message("assistant", NAN)),
    "add_message result NaN": lambda conv, _: conv.add_message(
        Message("assistant", "x", tool_calls=[ToolCall("search_web", {}, result=NAN)])
    ),
    "assistant message NaN": lambda conv, _: conv.add_assistant_message(NAN),
    "assistant message NaN, not complete": lambda conv, _: conv.add_assistant_message(
        NAN, complete=False
    ),
    "assistant message too deep": lambda conv, _: conv.add_assistant_message(DEEP),
    "assistant message result NaN": lambda conv, _: conv.add_assistant_message(
        "x", tool_calls=[ToolCall("search_web", {}, result=NAN)]
    ),
    "assistant message blob result NaN": lambda conv, _: conv.add_assistant_message(
        "x", tool_calls=[ToolCall("search_web", {}, result=BIG_BAD)]
    ),
    "assistant message call without result": lambda conv, _: conv.add_assistant_message(
        "x", tool_calls=[ToolCall("search_web", {})]
    ),
    "assistant message cost NaN": lambda conv, _: conv.add_assistant_message("x", cost_usd=NAN),
    "stream lone surrogate": lambda conv, _: conv.stream(LONE),
    "begin_reply extra NaN": lambda conv, _: conv.begin_reply(extra={"x": NAN}),
    "start_tool_call arguments NaN": lambda conv, _: conv.start_tool_call("search_web", NAN),
    "start_tool_call extra lone surrogate": lambda conv, _: conv.start_tool_call(
        "search_web", {}, extra={"note": LONE}
    ),
    "finish_tool_call NaN": lambda conv, call: conv.finish_tool_call(call, NAN),
    "finish_tool_call blob NaN": lambda conv, call: conv.finish_tool_call(call, BIG_BAD),
    "complete_turn cost NaN": lambda conv, _: conv.complete_turn(cost_usd=NAN),
    "add_message role int": lambda conv, _: conv.add_message(Message(FIVE, "x")),
    "add_message role empty": lambda conv, _: conv.add_message(Message("", "x")),
    "add_message timestamp int": lambda conv, _: conv.add_message(
        Message("assistant", "x", timestamp=FIVE)
    ),
    "add_message tool_calls str": lambda conv, _: conv.add_message(
        Message("assistant", "x", tool_calls=TEXT)
    ),
    "add_message call without name": lambda conv, _: conv.add_message(
        Message("assistant", "x", tool_calls=[ToolCall("", {}, result=1)])
    ),
    "add_message call duration str": lambda conv, _: conv.add_message(
        Message(
            "assistant", "x", tool_calls=[ToolCall("search_web", {}, result=1, duration_ms=TEXT)]
        )
    ),
    "assistant message timestamp int": lambda conv, _: conv.add_assistant_message(
        "x", timestamp=FIVE
    ),
    "assistant message tokens negative": lambda conv, _: conv.add_assistant_message(
        "x", input_tokens=-1
    ),
    "assistant message tokens str": lambda conv, _: conv.add_assistant_message(
        "x", output_tokens=TEXT
    ),
    "assistant message cost negative": lambda conv, _: conv.add_assistant_message(
        "x", cost_usd=-0.5
    ),
    "start_tool_call name int": lambda conv, _: conv.start_tool_call(FIVE, {}),
    "start_tool_call name empty": lambda conv, _: conv.start_tool_call("", {}),
    "finish_tool_call duration bool": lambda conv, call: conv.finish_tool_call(
        call, 1, duration_ms=True
    ),
    "finish_tool_call duration negative": lambda conv, call: conv.finish_tool_call(
        call, 1, duration_ms=-1
    ),
    "finish_tool_call duration infinite": lambda conv, call: conv.finish_tool_call(
        call, 1, duration_ms=float("inf")
    ),
    "complete_turn tokens float": lambda conv, _: conv.complete_turn(input_tokens=1.5),
    "complete_turn tokens bool": lambda conv, _: conv.complete_turn(output_tokens=True),
    "complete_turn cost str": lambda conv, _: conv.complete_turn(cost_usd=TEXT),
}


@pytest.mark.parametrize("due", [False, True], ids=["buffered", "flush-due"])
@pytest.mark.parametrize("name", sorted(WHEN_CLOSED))
def test_a_refused_value_between_turns_leaves_the_handle_as_it_was(
    make_conversations: Any, clock: FakeClock, name: str, due: bool
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    between_turns(conv)
    before = view(conv)
    rows = step_rows(make_conversations.url, conv.conversation_id)
    commits = spy_commits(conversations)
    clock.advance(1.0 if due else 0.0)
    with pytest.raises(InvalidValueError):
        WHEN_CLOSED[name](conv, None)
    assert view(conv) == before
    assert commits == []
    assert step_rows(make_conversations.url, conv.conversation_id) == rows
    info = conv.add_user_message("q2", timestamp="T")
    assert (info.step, info.is_open) == (2, True)
    assert conv.add_assistant_message("a2", timestamp="T").step == 2
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert [m.content for m in recovered.messages] == ["q1", "a1", "q2", "a2"]


@pytest.mark.parametrize("due", [False, True], ids=["buffered", "flush-due"])
@pytest.mark.parametrize("name", sorted(WHEN_OPEN))
def test_a_refused_value_in_a_turn_leaves_the_handle_as_it_was(
    make_conversations: Any, clock: FakeClock, name: str, due: bool
) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    call = in_a_turn(conv)
    before = view(conv)
    rows = step_rows(make_conversations.url, conv.conversation_id)
    commits = spy_commits(conversations)
    clock.advance(1.0 if due else 0.0)
    with pytest.raises(InvalidValueError):
        WHEN_OPEN[name](conv, call)
    assert view(conv) == before
    assert commits == []
    assert step_rows(make_conversations.url, conv.conversation_id) == rows
    assert not call.has_result
    # The buffered text and the running call are intact and go on from where they were.
    conv.finish_tool_call(call, {"temperature": 12}, duration_ms=5)
    conv.stream("done.")
    info = conv.add_assistant_message("It is 12 degrees.", timestamp="T", cost_usd=0.5)
    assert (info.step, info.is_open) == (2, False)
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert dumps(recovered.messages) == dumps(conv.messages)
    assert [m.content for m in recovered.messages][2:] == [
        "q2",
        "pending done.",
        "It is 12 degrees.",
    ]
    assert recovered.messages[3].tool_calls[0].result == {"temperature": 12}
    assert recovered.state.metadata.cost_estimate_usd == 0.5


def test_a_refused_result_can_be_given_again_as_a_blob(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    call = in_a_turn(conv)
    with pytest.raises(InvalidValueError):
        conv.finish_tool_call(call, BIG_BAD)
    good = {**BIG_BAD, "score": 0.5}
    conv.finish_tool_call(call, good)
    assert call.result_ref is not None
    conv.complete_turn()
    stored = run_sql(
        make_conversations.url,
        "SELECT digest FROM blobs WHERE run_id = ?",
        str(conv.conversation_id),
    )
    assert stored == [(call.result_ref.digest,)]
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert (
        make_conversations().load_result(conv.conversation_id, recovered.messages[3].tool_calls[0])
        == good
    )


def test_a_refused_user_message_undoes_the_archiving_it_started(
    make_conversations: Any,
) -> None:
    options = ConversationOptions(archive_threshold=3000, archive_keep_turns=1)
    conversations = make_conversations(options=options)
    conv = start(conversations)
    turns = 0
    while True:  # until the state is over the threshold: the next turn archives
        conv.add_user_message(f"q{turns} " + "x" * 300, timestamp="T")
        info = conv.add_assistant_message(f"a{turns} " + "y" * 300, timestamp="T")
        turns += 1
        if info.state_bytes > options.archive_threshold:
            break
    assert conv.state.archive is None
    all_before = dumps(conv.all_messages())  # caches the archived part in the handle
    before = view(conv)
    with pytest.raises(InvalidValueError):
        conv.add_user_message(NAN)  # this turn would archive the oldest ones
    assert view(conv) == before
    assert dumps(conv.all_messages()) == all_before
    history = "SELECT count(*) FROM history WHERE run_id = ?"
    assert run_sql(make_conversations.url, history, str(conv.conversation_id)) == [(0,)]
    conv.add_user_message("q6", timestamp="T")
    conv.add_assistant_message("a6", timestamp="T")
    assert conv.state.archive is not None
    assert run_sql(make_conversations.url, history, str(conv.conversation_id)) == [(1,)]
    everything = make_conversations().all_messages(conv.conversation_id)
    assert dumps(everything) == dumps(conv.all_messages())
    assert [m.content for m in everything][-2:] == ["q6", "a6"]
    assert len(everything) == 2 * turns + 2


def test_a_conflict_leaves_the_handle_as_it_was(make_conversations: Any, clock: FakeClock) -> None:
    conv = start(make_conversations())
    between_turns(conv)
    other = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    other.add_user_message("from another process", timestamp="T")
    before = view(conv)
    with pytest.raises(StaleHeadError):
        conv.add_user_message("q2", timestamp="T")
    assert view(conv) == before  # no half-open turn
    with pytest.raises(StaleHeadError, match="open it again"):
        conv.add_user_message("q2", timestamp="T")
    assert view(conv) == before

    other.stream("other text")
    mine = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    other.flush()
    clock.advance(1.0)
    before = view(mine)
    with pytest.raises(StaleHeadError):
        mine.stream("my text")  # due: the flush is refused, and the text undone
    assert view(mine) == before
    with pytest.raises(StaleHeadError):
        mine.complete_turn(input_tokens=9)
    assert view(mine) == before
    reopened = make_conversations().open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    reopened.add_assistant_message("answered", timestamp="T")
    final = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert [m.content for m in final.messages][2:] == [
        "from another process",
        "other text",
        "answered",
    ]


def test_a_superseded_handle_is_left_as_it_was(make_conversations: Any) -> None:
    conversations = make_conversations()
    conv = start(conversations)
    between_turns(conv)
    newer = conversations.open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    before = view(conv)
    with pytest.raises(StaleHeadError, match="superseded"):
        conv.add_user_message("q2", timestamp="T")
    assert view(conv) == before
    assert newer.add_user_message("q2", timestamp="T").step == 2


MISUSED: dict[str, Refused] = {
    "a result given twice": lambda conv, call: conv.finish_tool_call(call, {"again": True}),
    "a call of an earlier turn": lambda conv, call: conv.finish_tool_call(call, {"late": True}),
    "a call that is no turn's": lambda conv, _: conv.finish_tool_call(
        ToolCall("get_weather", {}), {"foreign": True}
    ),
}


@pytest.mark.parametrize("name", sorted(MISUSED))
def test_a_result_is_recorded_once_and_only_in_the_open_turn(
    make_conversations: Any, name: str
) -> None:
    """finish_tool_call on a call that has its result, or is not the open turn's, is a
    TurnError that changes nothing: before, it overwrote a stored result (a sealed turn's
    too) in memory, and the next write carried it."""
    conversations = make_conversations()
    conv = start(conversations)
    call = in_a_turn(conv)
    conv.finish_tool_call(call, {"temperature": 12}, duration_ms=5)
    if name == "a call of an earlier turn":
        conv.complete_turn()
        conv.add_user_message("q3", timestamp="T")
    before = view(conv)
    rows = step_rows(make_conversations.url, conv.conversation_id)
    with pytest.raises(TurnError, match=r"result is recorded once|not one of the open turn"):
        MISUSED[name](conv, call)
    assert view(conv) == before
    assert step_rows(make_conversations.url, conv.conversation_id) == rows
    assert call.result == {"temperature": 12}
    conv.complete_turn()
    recovered = make_conversations().recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert dumps(recovered.messages) == dumps(conv.messages)
    assert recovered.messages[3].tool_calls[0].result == {"temperature": 12}
