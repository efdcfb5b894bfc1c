"""An OpenAI Agents SDK agent whose conversation history lives in agentckpt; no network.

    pip install 'agentckpt[openai-agents]'
    python examples/openai_agents_session.py                  # a SQLite file in a temp dir
    python examples/openai_agents_session.py --url postgresql://localhost/postgres?schema=demo

The agent's model is a small local class that answers with canned texts, so no API key is
needed. Two ``Runner.run_sync`` calls share one session; then a new session object (as a
restarted process would open) reads the same history back from the store.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agentckpt.integrations.openai_agents import AgentckptSession


class CannedModel(Model):
    """Answers each request with the next canned text; shows how much history it got."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        seen = 1 if isinstance(input, str) else len(input)
        text = f"{self.replies.pop(0)} (I was sent {seen} items)"
        message = ResponseOutputMessage(
            id=f"msg_{len(self.replies)}",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
            role="assistant",
            status="completed",
            type="message",
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("this example does not stream")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="store URL (default: a SQLite file in a temp dir)")
    args = parser.parse_args()
    set_tracing_disabled(True)  # nothing leaves this machine
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'sessions.db'}"
        model = CannedModel(["Nice to meet you, Ada.", "Your name is Ada."])
        agent = Agent(name="assistant", instructions="Answer briefly.", model=model)

        with AgentckptSession("user-ada", url=url) as session:
            asyncio.run(session.clear_session())  # start the demo from an empty history
            for question in ["Hi, I am Ada.", "What is my name?"]:
                result = Runner.run_sync(agent, question, session=session)
                print(f"user: {question}\nagent: {result.final_output}")
        # run_sync keeps this thread's event loop open for later calls; we are done with it.
        asyncio.get_event_loop_policy().get_event_loop().close()

        # A restarted process opens the same session and finds the whole history.
        with AgentckptSession("user-ada", url=url) as session:
            items = asyncio.run(session.get_items())
        print(f"history after restart: {len(items)} items")
        for item in items:
            content = item.get("content")
            text = content if isinstance(content, str) else content[0]["text"]
            print(f"  {item['role']}: {text}")


if __name__ == "__main__":
    main()
