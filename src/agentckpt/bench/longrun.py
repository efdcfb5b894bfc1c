"""The long-run workload: one run of many steps over a state of about 30 keys.

Each step replaces one to three keys with new values of the same kind and about the same
size, as an agent loop updates its plan, scratchpad, counters and last observation. The
state stays at a fixed size (about 12 KB encoded), so a store that keeps storage per run
independent of the run's length shows it here.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.text import TextSource

__all__ = ["LongRunSpec", "generate_long_run"]

KEYS = 30


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

    # 10 small scalars, 10 medium containers, 10 paragraphs: about 12 KB in all.
    return (
        [counter, ratio, flag, label, counter, ratio, flag, label, counter, label]
        + [
            plan,
            record,
        ]
        * 5
        + [note] * 10
    )


def generate_long_run(seed: int, steps: int) -> LongRunSpec:
    """A run of ``steps`` steps, the same for the same arguments."""
    rng = random.Random(f"agentckpt-bench:long-run:{seed}")
    text = TextSource(rng)
    makers = _makers(text)
    names = [f"key_{i:02d}" for i in range(KEYS)]
    initial = {name: make() for name, make in zip(names, makers, strict=True)}
    changes: list[dict[str, Any]] = []
    for _ in range(steps):
        picked = sorted(rng.sample(range(KEYS), rng.randint(1, 3)))
        changes.append({names[i]: makers[i]() for i in picked})
    return LongRunSpec(
        run_id=uuid.UUID(int=rng.getrandbits(128), version=4),
        initial=initial,
        steps=tuple(changes),
    )
