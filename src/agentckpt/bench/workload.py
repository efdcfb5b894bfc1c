"""The conversation workload: deterministic, seeded agent conversations (seed 000 format).

Every subject is fed the same :class:`ConversationSpec` objects, so each stores the same
logical content. A conversation's content depends only on ``(seed, index)``: changing
``--agents`` or ``--turns`` never changes what another agent says.

Per turn: a user message; an assistant reply, about half of them with one to three tool
calls whose results are mostly 100 B to 2 KB, some 10 to 50 KB and a few over 200 KB;
token counters and cost that grow every turn. Timestamps are synthetic (a fixed epoch
plus a seeded offset), so two runs of the generator are byte-identical.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agentckpt.bench.text import TextSource

__all__ = [
    "ConversationSpec",
    "ToolCallSpec",
    "TurnSpec",
    "apply_turn",
    "apply_user",
    "generate_chats",
    "generate_conversations",
    "initial_state",
]

STATE_VERSION = 2
TOOLS = (
    "get_weather",
    "search_web",
    "search_docs",
    "read_file",
    "fetch_url",
    "run_sql",
    "send_email",
    "calendar_lookup",
)
MODELS = ("llama-3-70b", "llama-3-8b", "mixtral-8x22b", "qwen-2-72b")
LORAS = ("weather-lora-v2", "router-lora-v1", "sql-lora-v3", "support-lora-v5", "code-lora-v1")
_EPOCH = datetime(2025, 3, 15, 10, 0, 0, tzinfo=UTC)

# Tool result sizes: (probability, low, high) in bytes of encoded JSON.
SMALL = (0.85, 100, 2 * 1024)
MEDIUM = (0.13, 10 * 1024, 50 * 1024)
LARGE = (0.02, 200 * 1024, 400 * 1024)


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call of an assistant reply, with its result."""

    tool_name: str
    arguments: dict[str, Any]
    result: Any
    duration_ms: int

    def to_json(self) -> dict[str, Any]:
        """The call as seed 000 stores it inline in the assistant message."""
        return {
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "result": self.result,
            "duration_ms": self.duration_ms,
        }


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """One turn: the user's message, then the assistant's reply and the turn's usage."""

    number: int
    pause: float  # seconds the agent waits before the turn in paced mode (unscaled)
    user_content: str
    user_timestamp: str
    assistant_content: str
    assistant_timestamp: str
    tool_calls: tuple[ToolCallSpec, ...]
    input_tokens: int
    output_tokens: int
    cost_usd: float

    def user_message(self) -> dict[str, Any]:
        """The user message as JSON (seed 000 key order)."""
        return {"role": "user", "content": self.user_content, "timestamp": self.user_timestamp}

    def assistant_message(self) -> dict[str, Any]:
        """The assistant message as JSON, tool calls inline (seed 000 key order)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.assistant_content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_json() for call in self.tool_calls]
        message["timestamp"] = self.assistant_timestamp
        return message


@dataclass(frozen=True, slots=True)
class ConversationSpec:
    """One agent's whole conversation, fixed in advance."""

    index: int
    conversation_id: uuid.UUID
    agent_id: str
    agent_config: dict[str, Any]
    tool_registry: list[str]
    metadata: dict[str, Any]
    turns: tuple[TurnSpec, ...]


def initial_state(spec: ConversationSpec) -> dict[str, Any]:
    """The seed 000 state before the first turn (a fresh, independent copy)."""
    return {
        "version": STATE_VERSION,
        "conversation": [],
        "agent_config": dict(spec.agent_config),
        "tool_registry": list(spec.tool_registry),
        "metadata": dict(spec.metadata),
    }


def apply_user(state: dict[str, Any], turn: TurnSpec) -> None:
    """Add the turn's user message to a seed 000 state, in place."""
    state["conversation"].append(turn.user_message())


def apply_turn(state: dict[str, Any], turn: TurnSpec) -> None:
    """Add the turn's assistant reply and usage to a seed 000 state, in place."""
    state["conversation"].append(turn.assistant_message())
    meta = state["metadata"]
    meta["input_tokens"] += turn.input_tokens
    meta["output_tokens"] += turn.output_tokens
    meta["cost_estimate_usd"] += turn.cost_usd


def _result_size(rng: random.Random) -> int:
    draw = rng.random()
    for probability, low, high in (LARGE, MEDIUM):
        if draw < probability:
            return rng.randint(low, high)
        draw -= probability
    return rng.randint(SMALL[1], SMALL[2])


def _timestamp(seconds: float) -> str:
    moment = _EPOCH + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _arguments(tool: str, text: TextSource) -> dict[str, Any]:
    if tool == "get_weather":
        return {"city": text.words(1)[0].title(), "units": "metric"}
    if tool == "run_sql":
        return {"query": "SELECT id, name, amount FROM orders WHERE " + " ".join(text.words(4))}
    if tool in ("read_file", "fetch_url"):
        return {"path": "/".join(text.words(3))}
    if tool == "send_email":
        return {"to": f"{text.words(1)[0]}@example.org", "subject": text.sentence(10, 40)}
    return {"query": " ".join(text.words(text.rng.randint(2, 6)))}


def _turn(
    number: int, clock: list[float], text: TextSource, tools: list[str], *, chat: bool = False
) -> TurnSpec:
    rng = text.rng
    pause = rng.uniform(1.0, 3.0)
    clock[0] += pause
    user_ts = _timestamp(clock[0])
    calls: list[ToolCallSpec] = []
    if not chat and rng.random() < 0.5:
        for _ in range(rng.choice((1, 1, 2, 3))):
            tool = rng.choice(tools)
            calls.append(
                ToolCallSpec(
                    tool_name=tool,
                    arguments=_arguments(tool, text),
                    result=text.tool_result(tool, _result_size(rng)),
                    duration_ms=rng.randint(20, 4000),
                )
            )
    clock[0] += rng.uniform(0.5, 8.0)
    input_tokens = rng.randint(200, 4000)
    output_tokens = rng.randint(20, 800)
    user_size, reply_size = ((200, 500), (400, 900)) if chat else ((20, 400), (50, 1500))
    return TurnSpec(
        number=number,
        pause=pause,
        user_content=text.sentence(*user_size),
        user_timestamp=user_ts,
        assistant_content=text.sentence(*reply_size),
        assistant_timestamp=_timestamp(clock[0]),
        tool_calls=tuple(calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=round((input_tokens * 0.5 + output_tokens * 1.5) / 1_000_000, 6),
    )


def _conversation(seed: int, index: int, turns: int, *, chat: bool = False) -> ConversationSpec:
    kind = "chat" if chat else "conversation"
    rng = random.Random(f"agentckpt-bench:{kind}:{seed}:{index}")
    text = TextSource(rng)
    tools = sorted(rng.sample(TOOLS, rng.randint(3, len(TOOLS))))
    config = {
        "model": rng.choice(MODELS),
        "lora_adapters": sorted(rng.sample(LORAS, rng.randint(1, 3))),
        "temperature": rng.choice((0.0, 0.2, 0.3, 0.7)),
        "max_tokens": rng.choice((1024, 2048, 4096)),
    }
    metadata = {
        "user_id": f"user_{rng.getrandbits(32):08x}",
        "session_id": f"sess_{rng.getrandbits(32):08x}",
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_estimate_usd": 0.0,
    }
    clock = [rng.uniform(0, 86_400.0)]
    return ConversationSpec(
        index=index,
        conversation_id=uuid.UUID(int=rng.getrandbits(128), version=4),
        agent_id=f"agent-{index:04d}",
        agent_config=config,
        tool_registry=tools,
        metadata=metadata,
        turns=tuple(_turn(n, clock, text, tools, chat=chat) for n in range(1, turns + 1)),
    )


def generate_conversations(seed: int, agents: int, turns: int) -> list[ConversationSpec]:
    """``agents`` conversations of ``turns`` turns each, the same for the same arguments."""
    return [_conversation(seed, index, turns) for index in range(agents)]


def generate_chats(seed: int, agents: int, turns: int) -> list[ConversationSpec]:
    """Plain chats for the curves: per turn a user message of 200 to 500 characters and a
    reply of 400 to 900 (about 1 KB of new JSON a turn), no tool calls, so a long one
    stays small enough for every subject to write 1,000 turns of it."""
    return [_conversation(seed, index, turns, chat=True) for index in range(agents)]
