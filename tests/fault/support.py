"""Helpers of the fault tests: agents on threads that record what was acknowledged."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from agentckpt import Store
from agentckpt.conversation import Conversations


def state(agent: str, n: int) -> dict[str, Any]:
    """The state an agent commits as its step ``n`` (deterministic)."""
    return {"agent": agent, "n": n, "note": f"{agent}-{n}" * 4}


@dataclass
class Figures:
    """What a fault test measured, printed with ``-s`` (and kept in the report)."""

    acked: int = 0
    lost: int = 0
    outcome_unknown: int = 0
    unavailable: int = 0
    outage_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def show(self, title: str) -> str:
        parts = [
            f"acked={self.acked}",
            f"lost={self.lost}",
            f"outcome_unknown={self.outcome_unknown}",
            f"unavailable={self.unavailable}",
            f"outage={self.outage_seconds:.2f}s",
        ] + [f"{k}={v}" for k, v in self.extra.items()]
        line = f"{title}: " + " ".join(parts)
        print(line)
        return line


class Agents:
    """Agents on threads, each committing steps until stopped; every acknowledged step
    and every acknowledgement's time is recorded."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.acked: dict[UUID, list[tuple[int, float]]] = {}
        # What each acknowledged step must read back as (see lost_steps).
        self.expected: dict[tuple[UUID, int], Any] = {}
        self.errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def ack(self, run_id: UUID, step: int, expected: Any) -> None:
        with self._lock:
            self.acked.setdefault(run_id, []).append((step, time.monotonic()))
            self.expected[(run_id, step)] = expected

    def start(self, name: str, body: Callable[[Agents], None]) -> None:
        def main() -> None:
            try:
                body(self)
            except BaseException as exc:
                self.errors.append(exc)

        thread = threading.Thread(target=main, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def join(self, timeout: float = 60) -> None:
        self.stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        assert not alive, f"agents still running: {alive}"

    def total(self) -> int:
        return sum(len(v) for v in self.acked.values())

    def last_ack_before(self, instant: float) -> float:
        return max((t for v in self.acked.values() for _, t in v if t <= instant), default=instant)

    def first_ack_after(self, instant: float) -> float | None:
        after = [t for v in self.acked.values() for _, t in v if t > instant]
        return min(after) if after else None

    def outage(self, since: float) -> float:
        """The longest any agent went without an acknowledgement, from ``since`` on."""
        longest = 0.0
        for acks in self.acked.values():
            times = [t for _, t in acks]
            for before, after in itertools.pairwise(times):
                if after > since:
                    longest = max(longest, after - max(before, since))
        return longest

    def each_acked_after(self, instant: float) -> bool:
        """Every agent acknowledged a step after ``instant`` (it went on by itself)."""
        return all(any(t > instant for _, t in v) for v in self.acked.values())


def read_back(state: Any, expected: Any) -> bool:
    """Whether a state read back is the acknowledged ``expected``: for a conversation its
    message texts, of which the hot state holds the newest (the older ones were moved to
    the history table, which its ``archive`` counts; :func:`lost_steps` reads those
    once per conversation); any other state as it is."""
    if isinstance(state, dict) and "conversation" in state:
        hot = [message.get("content") for message in state["conversation"]]
        archived = int(state.get("archive", {}).get("messages", 0))
        return len(expected) == archived + len(hot) and expected[archived:] == hot
    return bool(state == expected)


def lost_steps(store: Store, agents: Agents) -> int:
    """Acknowledged steps that are missing from ``store`` now, or read back otherwise;
    and for each conversation, its last acknowledged step's every message, archived ones
    included, read back through the conversation API."""
    lost = 0
    for run_id, acks in agents.acked.items():
        steps = {info.step for info in store.steps(run_id)}
        for step, _ in acks:
            if step not in steps:
                lost += 1
                continue
            state = store.state_at(run_id, step).state
            if not read_back(state, agents.expected[(run_id, step)]):
                lost += 1
        last = max((step for step, _ in acks if step in steps), default=None)
        if last is None:
            continue
        state = store.state_at(run_id, last).state
        if isinstance(state, dict) and "conversation" in state and "archive" in state:
            recovered = Conversations(store).recover(
                run_id, agent_config=state["agent_config"], tools=state["tool_registry"]
            )
            texts = [m.content for m in recovered.messages][: len(agents.expected[(run_id, last)])]
            if texts != agents.expected[(run_id, last)]:
                lost += 1
    return lost
