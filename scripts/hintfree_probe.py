"""Hint-free ``Store.commit`` of a long conversation state, for instruction counts.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/hintfree_probe.py TURN COMMITS [--shape nested] [--cpu]
    PYTHONPATH=src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python scripts/hintfree_probe.py 500 80

Builds the benchmark chat's state after ``TURN`` turns (``agentckpt.bench.workload``, one
chat, about 1 KB of new JSON a turn) and commits it whole as the run's first step, then
``COMMITS`` more commits, each the full state with one message appended (the user's, then
the assistant's with the usage), each a new top-level object and list sharing the message
dicts, as the benchmark's hint-free curve commits them. So two runs that differ only in
``COMMITS`` differ only by those commits: under callgrind,
``(count(TURN, 80) - count(TURN, 0)) / 80`` is the instructions of one commit at turn
``TURN``, four snapshots (the default policy's one in 20 steps) included.

``--shape flat`` (the default) is seed 000's state, the messages a top-level member;
``--shape nested`` is the shape LangGraph's saver commits (``{"id", "checkpoint",
"values": {"messages": [...]}}``). ``--no-snapshots`` commits with a policy that never
snapshots after the first step (what the deltas alone cost). ``--cpu`` prints
``time.process_time`` per commit. The SQLite file is in ``/dev/shm``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from agentckpt import SnapshotPolicy, Store
from agentckpt.bench.workload import (
    ConversationSpec,
    TurnSpec,
    apply_turn,
    apply_user,
    generate_chats,
    initial_state,
)


class Flat:
    """Seed 000's state, as the benchmark's hint-free subject commits it."""

    def __init__(self, spec: ConversationSpec) -> None:
        self.state = initial_state(spec)

    def add(self, turn: TurnSpec, user: bool) -> dict[str, Any]:
        state = self.state
        self.state = state = state | {
            "conversation": list(state["conversation"]),
            "metadata": dict(state["metadata"]),
        }
        (apply_user if user else apply_turn)(state, turn)
        return state


class Nested:
    """The layout of LangGraph's saver: the messages two levels down."""

    def __init__(self, spec: ConversationSpec) -> None:
        self.messages: list[dict[str, Any]] = []
        self.count = 0

    def add(self, turn: TurnSpec, user: bool) -> dict[str, Any]:
        self.count += 1
        message = turn.user_message() if user else turn.assistant_message()
        self.messages = [*self.messages, message]
        return {
            "id": f"checkpoint-{self.count:08d}",
            "checkpoint": {
                "v": 4,
                "ts": f"2026-01-01T00:00:{self.count % 60:02d}Z",
                "channel_versions": {"__start__": 1, "messages": self.count},
                "versions_seen": {"agent": {"messages": self.count - 1}},
            },
            "values": {"messages": self.messages, "remaining_steps": 25},
        }


def main() -> None:
    """Build the state, commit it, then time the commits asked for."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("turn", type=int)
    parser.add_argument("commits", type=int)
    parser.add_argument("--shape", choices=("flat", "nested"), default="flat")
    parser.add_argument("--no-snapshots", action="store_true")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    spec = generate_chats(0, 1, args.turn + args.commits // 2 + 2)[0]
    policy = SnapshotPolicy(interval=10**9, max_chain_bytes=2**62) if args.no_snapshots else None
    store = Store.connect(f"sqlite:///{tempfile.mkdtemp(dir='/dev/shm')}/probe.db", policy=policy)
    store.create_run(spec.conversation_id, agent_id=spec.agent_id)
    shape = Flat(spec) if args.shape == "flat" else Nested(spec)
    turns = iter(spec.turns)
    for _ in range(args.turn):
        turn = next(turns)
        shape.add(turn, True)
        state = shape.add(turn, False)
    store.commit(spec.conversation_id, state)
    cpu = time.process_time()
    for i in range(args.commits):
        if i % 2 == 0:
            turn = next(turns)
        store.commit(spec.conversation_id, shape.add(turn, i % 2 == 0))
    cpu = time.process_time() - cpu
    store.close()
    if args.cpu and args.commits:
        print(
            f"{args.shape} turn {args.turn}: {1000 * cpu / args.commits:.3f} ms client CPU "
            f"per commit ({args.commits} commits)"
        )


if __name__ == "__main__":
    main()
