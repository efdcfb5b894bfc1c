"""The long-run workload: one run of many steps over a state of a fixed number of keys.

Each step replaces one to three keys with new values of the same kind and about the same
size, as an agent loop updates its plan, scratchpad, counters and last observation. The
state stays at a fixed size, so a store that keeps storage per run independent of the
run's length shows it here. Two shapes are measured (``--state-keys``): 30 keys (about
12 KB encoded, the default) and 300 keys (the same mix ten times over, about 120 KB);
both change one to three keys per step, so a store whose cost follows the bytes that
changed costs about the same per step on both.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.text import TextSource

__all__ = ["KEYS", "SHAPES", "LongRunSpec", "generate_long_run"]

KEYS = 30
SHAPES = (30, 300)


@dataclass(frozen=True, slots=True)
class LongRunSpec:
    """The run: its id, its initial state (step 0) and each step's changed keys."""

    run_id: uuid.UUID
    initial: dict[str, Any]
    steps: tuple[dict[str, Any], ...]

    def state_at(self, step: int) -> dict[str, Any]:
        """The full state after ``step`` steps (a new dict; values are shared)."""
        state = dict(self.initial)
        for changes in self.steps[:step]:
            state.update(changes)
        return state


def _makers(text: TextSource) -> list[Callable[[], Any]]:
    rng = text.rng

    def counter() -> Any:
        return rng.randrange(1_000_000)

    def ratio() -> Any:
        return round(rng.random(), 6)

    def flag() -> Any:
        return rng.random() < 0.5

    def label() -> Any:
        return " ".join(text.words(3))

    def plan() -> Any:
        return [text.sentence(20, 60) for _ in range(rng.randint(3, 6))]

    def record() -> Any:
        return {
            "status": rng.choice(("ok", "retry", "waiting", "done")),
            "detail": text.sentence(40, 160),
            "attempts": rng.randint(0, 5),
            "tags": text.words(rng.randint(1, 4)),
        }

    def note() -> Any:
        return text.sentence(600, 1200)

    # 10 small scalars, 10 medium containers, 10 paragraphs: about 12 KB in all (a state
    # of more keys repeats this mix).
    return (
        [counter, ratio, flag, label, counter, ratio, flag, label, counter, label]
        + [
            plan,
            record,
        ]
        * 5
        + [note] * 10
    )


def generate_long_run(seed: int, steps: int, keys: int = KEYS) -> LongRunSpec:
    """A run of ``steps`` steps over ``keys`` keys, the same for the same arguments."""
    # The 30-key stream is the one this workload always had, so its figures compare with
    # earlier runs; other shapes draw from a stream of their own.
    name = f"agentckpt-bench:long-run:{seed}" + ("" if keys == KEYS else f":{keys}")
    rng = random.Random(name)
    text = TextSource(rng)
    mix = _makers(text)
    makers = [mix[i % len(mix)] for i in range(keys)]
    width = max(2, len(str(keys - 1)))
    names = [f"key_{i:0{width}d}" for i in range(keys)]
    initial = {name: make() for name, make in zip(names, makers, strict=True)}
    changes: list[dict[str, Any]] = []
    for _ in range(steps):
        picked = sorted(rng.sample(range(keys), min(rng.randint(1, 3), keys)))
        changes.append({names[i]: makers[i]() for i in picked})
    return LongRunSpec(
        run_id=uuid.UUID(int=rng.getrandbits(128), version=4),
        initial=initial,
        steps=tuple(changes),
    )
