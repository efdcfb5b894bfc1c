"""Large tool results: compressed out of the row, loaded lazily, verified by sha256."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest
import zstandard

from agentckpt import AsyncStore, CorruptDataError, Store
from agentckpt._core.blobs import is_ref
from agentckpt._core.codec import encode
from agentckpt.conversation import ConversationOptions, ResultNotLoadedError, ToolCall
from tests.support.conversation import CONFIG, TOOLS, run_sql

BIG = {"rows": [{"id": i, "city": "Berlin", "temperature": i % 30} for i in range(400)]}


def with_big_result(conversations: Any, result: Any = BIG) -> Any:
    conv = conversations.start(agent_id="a", agent_config=CONFIG, tools=TOOLS)
    conv.add_user_message("history?", timestamp="T")
    call = conv.start_tool_call("search_web", {"q": "weather history"})
    conv.finish_tool_call(call, result, duration_ms=900)
    conv.complete_turn()
    return conv


def recovered_call(make_conversations: Any, conversation_id: Any) -> tuple[Any, ToolCall]:
    conversations = make_conversations()
    recovered = conversations.recover(conversation_id, agent_config=CONFIG, tools=TOOLS)
    return conversations, recovered.messages[1].tool_calls[0]


def test_a_large_result_is_stored_compressed_beside_a_small_reference(
    make_conversations: Any,
) -> None:
    conv = with_big_result(make_conversations())
    size = len(encode(BIG))
    assert size > 4096
    stored = conv.conversations.store.steps(conv.conversation_id)[-1]
    assert stored.state_bytes < 1000  # the state keeps only the reference
    rows = run_sql(
        make_conversations.url,
        "SELECT codec, size, length(data) FROM blobs WHERE run_id = ?",
        str(conv.conversation_id),
    )
    assert len(rows) == 1
    codec, blob_size, stored_bytes = rows[0]
    assert (codec, blob_size) == ("zstd", size)
    assert stored_bytes < size / 5
    _, call = recovered_call(make_conversations, conv.conversation_id)
    ref = call.to_json()["result"]
    assert is_ref(ref)
    assert ref["codec"] == "zstd"
    assert ref["size"] == size
    assert call.result_ref is not None
    assert not call.is_loaded


def test_the_result_loads_on_first_access_exactly(make_conversations: Any, api: str) -> None:
    conv = with_big_result(make_conversations())
    conversations, call = recovered_call(make_conversations, conv.conversation_id)
    if api == "sync":
        assert call.result == BIG  # the sync API loads on attribute access
    else:
        with pytest.raises(ResultNotLoadedError, match="load_result"):
            _ = call.result
        assert conversations.load_result(conv.conversation_id, call) == BIG
    assert call.is_loaded
    assert call.result == BIG
    assert conversations.load_result(conv.conversation_id, call) == BIG


def test_a_large_blob_is_packed_beside_the_event_loop(
    make_conversations: Any, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The async API compresses and hashes a blob of 16 KB or more on the loop's executor
    # (zstd and sha256 release the GIL), a smaller one in place; the sync API in place.
    threads: list[int] = []
    for cls in (Store, AsyncStore):
        real = cls.prepare_blob

        def spy(data: bytes, real: Any = real) -> Any:
            threads.append(threading.get_ident())
            return real(data)

        monkeypatch.setattr(cls, "prepare_blob", staticmethod(spy))
    small = {"rows": [{"id": i, "city": "Berlin"} for i in range(300)]}
    assert 4096 < len(encode(small)) < 16 * 1024 < len(encode(BIG))
    conv = with_big_result(make_conversations(), BIG)
    with_big_result(make_conversations(), small)
    here = threading.get_ident()
    assert threads[1] == here
    assert (threads[0] == here) == (api == "sync")
    conversations, call = recovered_call(make_conversations, conv.conversation_id)
    assert conversations.load_result(conv.conversation_id, call) == BIG


def test_small_results_stay_inline_and_the_threshold_is_configurable(
    make_conversations: Any,
) -> None:
    conv = with_big_result(make_conversations(), {"t": 12})
    _, call = recovered_call(make_conversations, conv.conversation_id)
    assert call.result_ref is None
    assert call.result == {"t": 12}
    small = make_conversations(options=ConversationOptions(blob_threshold=4))
    conv = with_big_result(small, {"t": 12})
    _, call = recovered_call(make_conversations, conv.conversation_id)
    assert call.result_ref is not None


def test_a_result_that_looks_like_a_reference_is_stored_as_a_blob(
    make_conversations: Any, api: str
) -> None:
    lookalike = {"$blob": "sha256:" + "0" * 64, "uri": "x", "size": 1, "codec": "none"}
    conv = with_big_result(make_conversations(), lookalike)
    conversations, call = recovered_call(make_conversations, conv.conversation_id)
    assert call.result_ref is not None
    assert call.result_ref.digest != "0" * 64
    assert conversations.load_result(conv.conversation_id, call) == lookalike


@pytest.mark.parametrize("damage", ["other-content", "garbage"])
def test_a_damaged_blob_is_a_corrupt_data_error(make_conversations: Any, damage: str) -> None:
    conv = with_big_result(make_conversations())
    data = (
        zstandard.compress(encode({"rows": []}))
        if damage == "other-content"
        else b"not zstd at all"
    )
    run_sql(
        make_conversations.url,
        "UPDATE blobs SET data = ? WHERE run_id = ?",
        data,
        str(conv.conversation_id),
    )
    conversations, call = recovered_call(make_conversations, conv.conversation_id)
    expected = "sha256" if damage == "other-content" else "decompress"
    with pytest.raises(CorruptDataError, match=expected):
        conversations.load_result(conv.conversation_id, call)
    assert not call.is_loaded


def test_later_turns_neither_resend_nor_reencode_blobs(make_conversations: Any) -> None:
    conversations = make_conversations()
    store = conversations.store
    inner = getattr(store, "inner", store)
    sent: list[int] = []
    original = inner.commit

    if inspect.iscoroutinefunction(original):

        async def spy(*args: Any, **kwargs: Any) -> Any:
            sent.append(len(kwargs.get("blobs", ())))
            return await original(*args, **kwargs)

    else:

        def spy(*args: Any, **kwargs: Any) -> Any:
            sent.append(len(kwargs.get("blobs", ())))
            return original(*args, **kwargs)

    inner.commit = spy
    conv = with_big_result(conversations)
    for turn in range(3):
        conv.add_user_message(f"more {turn}", timestamp="T")
        conv.add_assistant_message("ok", timestamp="T")
    # user message, tool result (with its blob), sealed turn; then 2 writes per turn.
    assert sent == [0, 1, 0] + [0] * 6
    last = store.steps(conv.conversation_id)[-1]
    assert last.kind == "delta"
    assert last.raw_bytes < 300


def test_archived_calls_with_blob_results_still_load(make_conversations: Any) -> None:
    options = ConversationOptions(archive_threshold=600, archive_keep_turns=1)
    conv = with_big_result(make_conversations(options=options))
    for turn in range(4):
        conv.add_user_message(f"turn {turn} " + "x" * 200, timestamp="T")
        conv.add_assistant_message("ok " + "y" * 200, timestamp="T")
    conversations = make_conversations()
    messages = conversations.all_messages(conv.conversation_id)
    call = messages[1].tool_calls[0]
    assert conversations.load_result(conv.conversation_id, call) == BIG
    recovered = conversations.recover(conv.conversation_id, agent_config=CONFIG, tools=TOOLS)
    assert recovered.state.archived_messages >= 2
