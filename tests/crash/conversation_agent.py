"""A deterministic streaming agent for the SIGKILL tests; runs as a child process.

    python crash_agent.py URL CONVERSATION_ID TURNS [PAUSE_AT]

It opens (or starts) the conversation, replays a turn that was cut off (dropping its
partial reply, as seed 000 does), and runs the remaining turns: a user message, a
streamed reply with one tool call in the middle, then the sealed turn. It prints one line
per event once it is durable (``USER t``, ``FLUSH t i``, ``TOOL t``, ``DONE t``) and
``FINISHED`` at the end. With ``PAUSE_AT`` it stops after printing that event and waits
for the SIGKILL. The clock is scripted, so flushes happen at the same chunks every run.
"""

from __future__ import annotations

import sys
from typing import Any

from agentckpt import Store
from agentckpt.conversation import Conversations

CONFIG: dict[str, Any] = {
    "model": "llama-3-70b",
    "lora_adapters": ["weather-lora-v2"],
    "temperature": 0.3,
    "max_tokens": 4096,
}
TOOLS = ["get_weather", "send_email"]
CHUNK_SECONDS = 0.2  # each streamed chunk takes this long on the scripted clock


def user_text(turn: int) -> str:
    return f"Turn {turn}: what is the weather in city {turn}?"


def chunks_before(turn: int) -> list[str]:
    return [f"Let me check city {turn}, ", "one moment, ", "calling ", "the API. "]


def chunks_after(turn: int) -> list[str]:
    return [f"It is {turn % 30} degrees ", "and ", "cloudy ", f"in city {turn}."]


def tool_result(turn: int) -> dict[str, Any]:
    return {"city": turn, "temperature": turn % 30, "condition": "cloudy"}


def expected_messages(turns: int) -> list[dict[str, Any]]:
    """The messages of an uncrashed run of ``turns`` turns, as stored."""
    out: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        out.append({"role": "user", "content": user_text(turn), "timestamp": f"U{turn}"})
        out.append(
            {
                "role": "assistant",
                "content": "".join(chunks_before(turn) + chunks_after(turn)),
                "tool_calls": [
                    {
                        "tool_name": "get_weather",
                        "arguments": {"city": turn},
                        "result": tool_result(turn),
                        "duration_ms": turn,
                    }
                ],
                "timestamp": f"A{turn}",
            }
        )
    return out


def main(url: str, conversation_id: str, turns: int, pause_at: str | None) -> None:
    now = [0.0]

    def say(event: str) -> None:
        print(event, flush=True)
        if event == pause_at:
            sys.stdin.readline()  # wait here for the SIGKILL
            raise SystemExit("not killed")

    with Store.connect(url) as store:
        conversations = Conversations(store, clock=lambda: now[0])
        conv = conversations.open_or_start(
            conversation_id, agent_id="crash-agent", agent_config=CONFIG, tools=TOOLS
        )
        replay = conv.turn_open
        if replay:
            conv.discard_partial()
        first = (conv.turn or 0) if replay else (conv.turn or 0) + 1
        for turn in range(first, turns + 1):
            if not (replay and turn == first):
                conv.add_user_message(user_text(turn), timestamp=f"U{turn}")
                say(f"USER {turn}")
            conv.begin_reply(timestamp=f"A{turn}")
            for i, chunk in enumerate(chunks_before(turn)):
                now[0] += CHUNK_SECONDS
                if conv.stream(chunk):
                    say(f"FLUSH {turn} {i}")
            call = conv.start_tool_call("get_weather", {"city": turn})
            conv.finish_tool_call(call, tool_result(turn), duration_ms=turn)
            say(f"TOOL {turn}")
            for i, chunk in enumerate(chunks_after(turn), start=len(chunks_before(turn))):
                now[0] += CHUNK_SECONDS
                if conv.stream(chunk):
                    say(f"FLUSH {turn} {i}")
            conv.complete_turn(input_tokens=10, output_tokens=20)
            say(f"DONE {turn}")
    print("FINISHED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
