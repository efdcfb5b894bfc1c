"""A blob reference is never redacted: its hex digest can hold a digit run that passes
the card-number check, and a redacted digest makes the blob unreachable."""

from __future__ import annotations

from typing import Any

from agentckpt import Conversations, Store
from agentckpt._core.blobs import BlobRef
from agentckpt.conversation import ConversationOptions
from agentckpt.redaction import DEFAULT_REDACTORS, redact, redact_text

CARD_LIKE = "a" * 24 + "4111111111111111" + "b" * 24


def test_a_reference_whose_digest_looks_like_a_card_is_kept() -> None:
    ref = BlobRef(digest=CARD_LIKE, size=10, codec="zstd", uri=f"db:sha256:{CARD_LIKE}").to_json()
    assert redact_text(CARD_LIKE, DEFAULT_REDACTORS)[0] != CARD_LIKE  # the premise
    kept, found = redact({"result": ref}, DEFAULT_REDACTORS)
    assert kept["result"] is ref
    assert found == []


def test_a_dict_shaped_like_a_reference_with_more_keys_is_redacted() -> None:
    ref: dict[str, Any] = BlobRef(digest="0" * 64, size=1, codec="zstd", uri="db:x").to_json()
    ref["note"] = "card 4111 1111 1111 1111"
    clean, found = redact(ref, DEFAULT_REDACTORS)
    assert "4111" not in clean["note"]
    assert [r.path for r in found] == ["/note"]


def test_every_offloaded_result_stays_loadable_under_the_default_redactors(url: str) -> None:
    options = ConversationOptions(blob_threshold=64)
    with Store.connect(url) as store:
        conversations = Conversations(store, options=options, redactors=DEFAULT_REDACTORS)
        conv = conversations.start(agent_id="blobs", agent_config={"model": "m"}, tools=["t"])
        for turn in range(60):
            conv.add_user_message(f"question {turn}")
            call = conv.start_tool_call("t", {"turn": turn})
            conv.finish_tool_call(call, {"turn": turn, "rows": ["r" * 40] * 4}, duration_ms=1)
            conv.complete_turn()
        conversation_id = conv.conversation_id
    with Store.connect(url) as store:
        conversations = Conversations(store, options=options, redactors=DEFAULT_REDACTORS)
        calls = [
            call
            for message in conversations.all_messages(conversation_id)
            for call in message.tool_calls or ()
        ]
        digests = [call.result_ref.digest for call in calls if call.result_ref is not None]
        assert len(digests) == 60
        # The content is fixed, so the digests are: some of them trip the card check.
        assert any(redact_text(d, DEFAULT_REDACTORS)[0] != d for d in digests)
        results = [conversations.load_result(conversation_id, call) for call in calls]
        assert [r["turn"] for r in results] == list(range(60))
