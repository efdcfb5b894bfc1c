"""The fast message readers build exactly what the full readers build, or step aside.

``Message.from_json`` and ``ToolCall.from_json`` first try a reader that accepts only the
shape the conversation API writes; for anything else it returns None and the full
reader runs. These tests hold the fast readers to that: on any input, either None, or
an object equal slot for slot to the full reader's; and every error is the full
reader's (same path, same reason).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt import InvalidValueError
from agentckpt._core.blobs import BlobRef
from agentckpt.conversation import ConversationState, Message, ToolCall
from agentckpt.conversation.messages import _fast_call, _fast_message, read_messages


class Name(str):
    """A str subclass: the full reader's isinstance checks take it, the fast one's not."""


class Count(int):
    """An int subclass, likewise."""


def slots(obj: Any) -> Any:
    """Every slot of a message or tool call (tool calls recursively), for comparison."""
    if isinstance(obj, list):
        return [slots(item) for item in obj]
    if isinstance(obj, Message | ToolCall):
        out = {}
        for name in type(obj).__slots__:
            value = getattr(obj, name)
            out[name] = (type(value), slots(value))
        return out
    return obj


REF = BlobRef(digest="ab" * 32, size=10, codec="zstd", uri="db:sha256:" + "ab" * 32).to_json()
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=3)
    | st.builds(Name, st.text(max_size=3))
    | st.builds(Count, st.integers(0, 5))
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
absent = object()


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.just(absent) | strategy


@st.composite
def calls(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(values)  # not an object at all
    fields = {
        "tool_name": draw(optional(st.text(max_size=3) | scalars)),
        "arguments": draw(optional(values)),
        "result": draw(optional(values | st.just(REF))),
        "duration_ms": draw(optional(scalars)),
    }
    extra = draw(st.dictionaries(st.sampled_from(["x", "y", "role"]), values, max_size=2))
    return _ordered(draw, fields, extra)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(values)
    fields = {
        "role": draw(optional(st.sampled_from(["user", "assistant"]) | scalars)),
        "content": draw(optional(values)),
        "tool_calls": draw(optional(st.none() | st.lists(calls(), max_size=3) | values)),
        "timestamp": draw(optional(st.text(max_size=3) | scalars)),
    }
    extra = draw(st.dictionaries(st.sampled_from(["x", "y", "tool_name"]), values, max_size=2))
    return _ordered(draw, fields, extra)


def _ordered(draw: st.DrawFn, fields: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    items = [(k, v) for k, v in fields.items() if v is not absent] + list(extra.items())
    return dict(draw(st.permutations(items)))


def outcome(read: Any, doc: Any) -> Any:
    try:
        return "ok", slots(read(copy.deepcopy(doc)))
    except InvalidValueError as exc:
        return "error", exc.path, exc.reason


@settings(max_examples=600, deadline=None)
@given(doc=messages())
def test_a_message_reads_as_the_full_reader_reads_it(doc: Any) -> None:
    full = outcome(lambda d: Message._from_json_checked(d, "/m"), doc)
    assert outcome(lambda d: Message.from_json(d, path="/m"), doc) == full
    fast = _fast_message(copy.deepcopy(doc))
    if fast is not None:
        assert full == ("ok", slots(fast))


@settings(max_examples=600, deadline=None)
@given(doc=calls())
def test_a_tool_call_reads_as_the_full_reader_reads_it(doc: Any) -> None:
    full = outcome(lambda d: ToolCall._from_json_checked(d, "/c"), doc)
    assert outcome(lambda d: ToolCall.from_json(d, path="/c"), doc) == full
    fast = _fast_call(copy.deepcopy(doc))
    if fast is not None:
        assert full == ("ok", slots(fast))


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(messages(), max_size=4))
def test_a_list_of_messages_fails_at_the_first_bad_one_with_its_path(docs: list[Any]) -> None:
    expected: list[Any] = []
    for i, doc in enumerate(docs):
        result = outcome(lambda d: Message._from_json_checked(d, f"/conversation/{i}"), doc)  # noqa: B023
        if result[0] == "error":
            expected = [result]
            break
        expected.append(result[1])
    try:
        got: list[Any] = slots(read_messages(copy.deepcopy(docs), "/conversation"))
    except InvalidValueError as exc:
        got = [("error", exc.path, exc.reason)]
    assert got == expected


def test_what_the_conversation_api_writes_takes_the_fast_path() -> None:
    """The speed-up is real only if the API's own documents never need the full reader."""
    call = ToolCall("get_weather", {"city": "Berlin"}, result={"t": 12}, duration_ms=340)
    blob = ToolCall("search", {"q": "x"}, result="big")
    blob.attach_blob(BlobRef.from_json(REF))
    running = ToolCall("send_email", {"to": "a"})
    documents = [
        Message("user", "hi", timestamp="2025-03-15T10:00:00Z").to_json(),
        Message("assistant", "ok", tool_calls=[call, blob, running], timestamp="t").to_json(),
        Message("assistant", None).to_json(),
    ]
    for doc in documents:
        fast = _fast_message(doc)
        assert fast is not None, doc
        assert fast.to_json() == doc
    state = ConversationState(conversation=[Message.from_json(d) for d in documents])
    assert ConversationState.from_json(state.to_json()).to_json() == state.to_json()
