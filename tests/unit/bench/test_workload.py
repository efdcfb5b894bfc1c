"""The workload generators: deterministic, seeded, and shaped as the benchmark says."""

from __future__ import annotations

import orjson

from agentckpt.bench.longrun import KEYS, generate_long_run
from agentckpt.bench.workload import (
    apply_turn,
    apply_user,
    generate_conversations,
    initial_state,
)


def test_same_seed_gives_the_same_conversations() -> None:
    first = generate_conversations(7, 3, 4)
    second = generate_conversations(7, 3, 4)
    assert first == second
    assert generate_conversations(8, 3, 4) != first


def test_an_agents_conversation_does_not_depend_on_how_many_agents_run() -> None:
    few = generate_conversations(1, 2, 3)
    many = generate_conversations(1, 5, 3)
    assert many[:2] == few
    assert len({spec.conversation_id for spec in many}) == 5


def test_turns_follow_the_seed_000_format_and_distribution() -> None:
    specs = generate_conversations(0, 20, 30)
    turns = [turn for spec in specs for turn in spec.turns]
    with_calls = sum(1 for turn in turns if turn.tool_calls)
    assert 0.4 < with_calls / len(turns) < 0.6
    sizes = [len(orjson.dumps(call.result)) for turn in turns for call in turn.tool_calls]
    small = sum(1 for s in sizes if s <= 2600)
    medium = sum(1 for s in sizes if 9_000 <= s <= 60_000)
    large = sum(1 for s in sizes if s > 200_000)
    assert small / len(sizes) > 0.75
    assert medium > 0
    assert large > 0
    assert small + medium + large == len(sizes)
    assert all(1.0 <= turn.pause <= 3.0 for turn in turns)


def test_state_helpers_build_the_seed_000_state() -> None:
    spec = generate_conversations(3, 1, 2)[0]
    state = initial_state(spec)
    assert list(state) == ["version", "conversation", "agent_config", "tool_registry", "metadata"]
    for turn in spec.turns:
        apply_user(state, turn)
        apply_turn(state, turn)
    assert [m["role"] for m in state["conversation"]] == ["user", "assistant"] * 2
    assert state["metadata"]["input_tokens"] == sum(t.input_tokens for t in spec.turns)
    assert state["metadata"]["output_tokens"] == sum(t.output_tokens for t in spec.turns)
    assert initial_state(spec)["conversation"] == []  # the spec itself is not mutated


def test_long_run_changes_one_to_three_of_thirty_keys_per_step() -> None:
    spec = generate_long_run(0, 200)
    assert spec == generate_long_run(0, 200)
    assert len(spec.initial) == KEYS == 30
    assert len(spec.steps) == 200
    assert all(1 <= len(changes) <= 3 for changes in spec.steps)
    assert all(set(changes) <= set(spec.initial) for changes in spec.steps)
    final = spec.state_at(200)
    assert set(final) == set(spec.initial)
    assert 8_000 < len(orjson.dumps(final)) < 20_000
    assert spec.state_at(0) == spec.initial
