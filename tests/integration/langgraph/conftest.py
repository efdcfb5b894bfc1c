"""Helpers for the framework adapter tests: raw SQL on a store's database, and savers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def saver(url: str) -> Iterator[Any]:
    """A LangGraph saver (sync store open) on a fresh SQLite or PostgreSQL database."""
    pytest.importorskip(
        "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
    )
    from agentckpt.integrations.langgraph import AgentckptSaver

    with AgentckptSaver.from_url(url) as opened:
        yield opened
