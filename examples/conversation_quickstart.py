"""Conversation checkpoints in five minutes: SQLite in a temporary directory, no network.

    python examples/conversation_quickstart.py

1. start a conversation (its heartbeat record is durable before the first turn);
2. a turn: the user's message (durable before the model runs), a streamed reply with a
   tool call whose large result goes to the blob store, then the sealed turn;
3. a second turn that "crashes" half-way (the process stops using it);
4. a new store (as a new process would) recovers: the config check, the pending turn,
   the flushed partial reply; then replays the turn and finishes it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agentckpt import Store
from agentckpt.conversation import ConfigDriftError, Conversations

AGENT_CONFIG = {
    "model": "llama-3-70b",
    "lora_adapters": ["weather-lora-v2", "router-lora-v1"],
    "temperature": 0.3,
    "max_tokens": 4096,
}
TOOLS = ["get_weather", "search_web", "send_email"]


def main(directory: Path) -> None:
    url = f"sqlite:///{directory / 'agents.db'}"
    now = [0.0]  # a scripted clock: the example decides when 500 ms have passed

    with Store.connect(url) as store:
        conversations = Conversations(store, clock=lambda: now[0])
        conv = conversations.start(
            agent_id="weather-agent",
            agent_config=AGENT_CONFIG,
            tools=TOOLS,
            metadata={"user_id": "user_abc123", "session_id": "sess_xyz789"},
        )
        print(f"started conversation {conv.conversation_id}")

        # Turn 1: durable user message, streamed reply, a tool call, sealed turn.
        conv.add_user_message("What was the weather in Berlin this year?")
        conv.stream("Let me check the weather archive. ")
        call = conv.start_tool_call("search_web", {"q": "Berlin weather 2025", "days": 365})
        history = [{"day": d, "temperature": 5 + d % 20, "condition": "cloudy"} for d in range(365)]
        conv.finish_tool_call(call, {"days": history}, duration_ms=840)  # written at once
        conv.stream("It was mostly cloudy, ")
        conv.stream("around 12 degrees on average.")
        info = conv.complete_turn(input_tokens=1523, output_tokens=421, cost_usd=0.023)
        print(f"turn {info.step} sealed (written {info.write_version} times, {info.kind})")
        print(f"  tool result stored as a blob: {call.result_ref}")

        # Turn 2 is cut off: the user's message and 600 ms of streamed text are durable.
        conv.add_user_message("And in Paris?")
        conv.stream("Paris was ")
        now[0] += 0.6
        conv.stream("sunnier, ")  # 500 ms since the last write: flushed
        conv.stream("with")  # not flushed: lost in the crash
        cid = conv.conversation_id
        print("the process dies in the middle of turn 2")

    # A new process: a fresh store on the same file.
    with Store.connect(url) as store:
        conversations = Conversations(store)
        try:
            conversations.recover(
                cid, agent_config={**AGENT_CONFIG, "temperature": 0.9}, tools=TOOLS
            )
        except ConfigDriftError as error:
            print(f"refused to resume with another config: {error.differences[0]}")

        recovered = conversations.recover(cid, agent_config=AGENT_CONFIG, tools=TOOLS)
        pending = recovered.pending
        assert pending is not None
        print(f"recovered {len(recovered.messages)} messages; turn {pending.turn} is pending")
        print(f"  its user message: {pending.user_message.content!r}")
        print(f"  flushed partial reply: {pending.partial[0].content!r}")
        result = recovered.messages[1].tool_calls[0].result  # loaded from the blob now
        print(f"  turn 1's tool result loads lazily: {len(result['days'])} days")

        conv = conversations.open(cid, agent_config=AGENT_CONFIG, tools=TOOLS)
        conv.discard_partial()  # replay the turn from its user message
        conv.add_assistant_message("Paris was sunnier, with about 14 degrees.")
        final = conversations.recover(cid, agent_config=AGENT_CONFIG, tools=TOOLS)
        assert final.pending is None
        for message in final.messages:
            print(f"  {message.role:>9}: {message.content}")
        conv.end()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(tmp))
