"""Bad arguments of start/open are an InvalidValueError naming the argument, and nothing
is written (issue 12: agent_config=5 and tools=5 raised TypeError)."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import InvalidValueError
from tests.support.conversation import CONFIG, TOOLS
from tests.support.dbsql import run_sql

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "agent_config int": ({"agent_config": 5}, "agent_config"),
    "agent_config list": ({"agent_config": [1]}, "agent_config"),
    "tools int": ({"tools": 5}, "tools"),
    "tools str": ({"tools": "get_weather"}, "tools"),
    "agent_id int": ({"agent_id": 5}, "agent_id"),
    "agent_id NUL": ({"agent_id": "a\x00"}, "agent_id"),
    "agent_id surrogate": ({"agent_id": "a\ud800"}, "agent_id"),
    "metadata list": ({"metadata": [1]}, "metadata"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_start_refuses_a_bad_argument(make_conversations: Any, case: str) -> None:
    conversations = make_conversations()
    changes, argument = BAD[case]
    args: dict[str, Any] = {"agent_id": "a", "agent_config": CONFIG, "tools": TOOLS, **changes}
    with pytest.raises(InvalidValueError, match=argument):
        conversations.start(**args)
    assert run_sql(make_conversations.url, "SELECT count(*) FROM runs") == [(0,)]


@pytest.mark.parametrize("case", ["agent_config int", "tools int"])
def test_open_refuses_a_bad_argument(make_conversations: Any, case: str) -> None:
    conversations = make_conversations()
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    changes, argument = BAD[case]
    args: dict[str, Any] = {"agent_config": CONFIG, "tools": TOOLS, **changes}
    with pytest.raises(InvalidValueError, match=argument):
        conversations.open(conv.conversation_id, **args)
    assert conversations.open(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
