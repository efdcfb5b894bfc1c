"""The examples run as a user would run them: separate processes, no network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name), "--url", url],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def test_langgraph_example(url: str) -> None:
    pytest.importorskip(
        "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
    )
    out = run_example("langgraph_graph.py", url)
    assert "resumed thread with 6 messages" in out
    assert "   ai: Have a great trip!" in out
    assert "checkpoints: 15" in out


def test_openai_agents_example(url: str) -> None:
    pytest.importorskip(
        "agents",
        reason="the OpenAI Agents SDK is not installed: pip install 'agentckpt[openai-agents]'",
    )
    out = run_example("openai_agents_session.py", url)
    assert "agent: Your name is Ada. (I was sent 3 items)" in out
    assert "history after restart: 4 items" in out
