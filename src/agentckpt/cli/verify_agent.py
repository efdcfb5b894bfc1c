"""The agent ``agentckpt verify`` kills: deterministic steps, one external call per step.

Each step appends a value that depends only on the step number to the state and makes
one external call through the run loop's effect journal (:meth:`StepContext.effect`).
The "external system" is an append-only ledger file: every call writes one line with the
effect's idempotency key and a token unique to that call, and returns the token, which
the step records in the state. So after any number of SIGKILLs the parent can check,
from the store and the ledger alone:

- every step the agent was told was durable is still there (nothing acknowledged lost);
- the state at the head is exactly the uncrashed agent's state (nothing mismatched);
- no call was made again once its result was recorded (no duplicated effect). A call
  made again because the process died between the call and the recording of its result
  is the journal's at-least-once window, which the idempotency key closes on the
  external side: it is counted apart ("replayed calls"), not as a failure.

:func:`live` is one life of the agent, run in a child process that the parent kills.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import Any

from agentckpt.runs import AgentRun, Finish, StepContext
from agentckpt.store.store import Store

AGENT_ID = "agentckpt-verify"
# Every life uses the same lease owner, so a new life takes over the killed one's lease.
OWNER = "agentckpt-verify"
EFFECT = "call"


def value(step: int) -> str:
    """What step ``step`` appends to the state's trail (deterministic)."""
    return hashlib.sha256(f"agentckpt-verify-{step}".encode()).hexdigest()[:16]


def initial_state() -> dict[str, Any]:
    """The state before the first step."""
    return {"step": 0, "trail": [], "calls": {}}


def expected_trail(step: int) -> list[str]:
    """The trail of an uncrashed agent after ``step`` steps."""
    return [value(n) for n in range(1, step + 1)]


def call(ledger: str, key: str) -> dict[str, str]:
    """The external system: log the call (one line, one write) and return its token."""
    token = uuid.uuid4().hex
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{key} {token}\n".encode())
    finally:
        os.close(fd)
    return {"token": token}


def read_ledger(ledger: str) -> dict[str, list[str]]:
    """The tokens of every call per idempotency key, in call order."""
    calls: dict[str, list[str]] = {}
    try:
        with open(ledger, encoding="utf-8") as lines:
            for line in lines:
                parts = line.split()
                if len(parts) == 2:  # a line cut by the SIGKILL is no call
                    calls.setdefault(parts[0], []).append(parts[1])
    except FileNotFoundError:
        pass
    return calls


def live(
    url: str, settings: dict[str, Any], run_id: str, steps: int, ledger: str, acks: Any
) -> None:
    """One life: resume the run (or start it) and step it to ``steps``, sending each
    step number to ``acks`` once it is durable, then ``"done"``; an error is sent as
    ``("error", text)``. Runs in a child process, which the parent SIGKILLs.

    ``"up"`` goes first, once the driver is imported: the parent's random kill instant
    counts from there, so a slow interpreter start never eats the whole window.
    """
    try:
        if url.startswith(("postgresql:", "postgres:")):
            import agentckpt._backends.postgres  # noqa: F401
        acks.send("up")
        with Store.connect(url, migrate=False, **settings) as store:
            run = AgentRun(
                store,
                run_id,
                agent_id=AGENT_ID,
                initial_state=initial_state(),
                owner=OWNER,
                heartbeat=False,
                snapshot_interval=10,
            )

            def step(ctx: StepContext) -> Any:
                result = ctx.effect(EFFECT, lambda key: call(ledger, key))
                state = ctx.state
                state["step"] = ctx.step
                state["trail"].append(value(ctx.step))
                state["calls"][str(ctx.step)] = result["token"]
                return Finish(state) if ctx.step >= steps else state

            for info in run.steps(step):
                acks.send(info.step)
        acks.send("done")
    except Exception as exc:
        acks.send(("error", f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None
