"""The public surface: every name exported, and no import cycle whatever loads first."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agentckpt.conversation as conversation


def test_every_exported_name_resolves() -> None:
    for name in conversation.__all__:
        assert getattr(conversation, name) is not None, name
    assert conversation.Conversations.__name__ == "Conversations"
    assert conversation.AsyncConversations.__name__ == "AsyncConversations"
    assert issubclass(conversation.Conversations, conversation.ConversationReader)


@pytest.mark.parametrize(
    "first",
    [
        "agentckpt.conversation.conversations",
        "agentckpt.conversation.turn",
        "agentckpt.conversation.reader_async",
        "agentckpt.conversation.model",
        "agentckpt.conversation",
    ],
)
def test_any_module_can_be_imported_first(first: str) -> None:
    code = (
        f"import {first}\n"
        "from agentckpt.conversation import *\n"
        "from agentckpt.conversation import Conversations, AsyncConversations\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
