"""Shared test data and raw SQL access for the conversation tests."""

from __future__ import annotations

import json
from typing import Any

from tests.support.dbsql import run_sql

CONFIG: dict[str, Any] = {
    "model": "llama-3-70b",
    "lora_adapters": ["weather-lora-v2", "router-lora-v1"],
    "temperature": 0.3,
    "max_tokens": 4096,
}
TOOLS = ["get_weather", "search_web", "send_email"]
METADATA: dict[str, Any] = {"user_id": "user_abc123", "session_id": "sess_xyz789"}


def dump(value: Any) -> str:
    """Text that differs whenever two JSON values differ (key order included)."""
    return json.dumps(value)


def dumps(messages: list[Any]) -> str:
    """The exact JSON text of a list of messages."""
    return dump([m.to_json() for m in messages])


def step_rows(url: str, run_id: Any) -> list[tuple[Any, ...]]:
    """``(step, is_open, write_version)`` of every stored step."""
    rows = run_sql(
        url,
        "SELECT step, is_open, write_version FROM steps WHERE run_id = ? ORDER BY step",
        str(run_id),
    )
    return [(step, bool(is_open), version) for step, is_open, version in rows]


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
