"""Small helpers shared by the run-loop tests."""

from __future__ import annotations

from typing import Any


def counter_step(ctx: Any) -> Any:
    """A minimal step: count up and remember which step did it."""
    ctx.state["n"] += 1
    ctx.state["seen"].append(ctx.step)
    return ctx.state


# Makes a one-step delta smaller than the state, as in real runs (a tiny state would be
# stored whole at every step, since its delta would not be smaller).
PROMPT = "You are a careful agent that counts. " * 8


def counter_state() -> dict[str, Any]:
    """The initial state of :func:`counter_step`."""
    return {"prompt": PROMPT, "n": 0, "seen": []}


def core(state: dict[str, Any]) -> dict[str, Any]:
    """The state without its padding."""
    return {k: v for k, v in state.items() if k != "prompt"}
