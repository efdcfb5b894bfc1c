"""A deterministic agent run in its own process, for the crash and fencing tests.

    python tests/crash/run_agent.py URL RUN_ID MAX_STEPS [options]

Prints ``COMMITTED <n>`` once step n is durable and ``FINAL <json>`` with the final
state. Options:

- ``--pause-after N``: after committing step N, print ``PAUSED N`` and block on stdin
  (the test kills the process there, at a known point).
- ``--hold-in-step N``: inside step N, after the effect ran and the new state is ready
  but before it is returned for commit, print ``HOLDING N`` and block until a line
  arrives on stdin.
- ``--owner NAME``, ``--ttl SECONDS``: the worker's lease.
- ``--marker TEXT``: written into each state this process computes.
- ``--effects FILE``: the "external system": each effect appends its idempotency key.
- ``--overlap``: the asyncio loop with ``overlap=True`` (``AsyncAgentRun``): step N+1
  is computed while step N's commit is in flight; the same steps, the same states.

Exit status 3 with ``FENCED <message>`` when the run was taken over.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from agentckpt import AsyncStore, FencedError, Store
from agentckpt.runs import AgentRun, AsyncAgentRun

TOOLS = ("search", "calculator", "read_file")
AGENT_ID = "crash-agent"


def initial_state() -> dict[str, Any]:
    """Where every run of this agent starts."""
    return {
        "system": "You are a meticulous planner. " * 10,
        "messages": [{"role": "user", "content": "Plan a three-city trip."}],
        "notes": {},
        "total": 0,
    }


class _Script:
    """The agent's scripted model and tool; the sync and async step functions share it."""

    def __init__(self, marker: str, effects: Path | None, hold_in: int | None) -> None:
        self.marker = marker
        self.effects = effects
        self.hold_in = hold_in

    def tool_of(self, n: int) -> tuple[str, str]:
        seed = hashlib.sha256(f"step-{n}".encode()).hexdigest()
        return seed, TOOLS[int(seed[:2], 16) % len(TOOLS)]

    def call_tool(self, key: str, tool: str, n: int) -> dict[str, Any]:
        if self.effects is not None:
            with self.effects.open("a") as log:
                log.write(f"{n} {key}\n")
        digest = hashlib.sha256(f"{tool}-{n}".encode()).hexdigest()
        return {"tool": tool, "output": digest[:16], "value": int(digest[:4], 16)}

    def advance(self, state: Any, n: int, seed: str, tool: str, result: dict[str, Any]) -> Any:
        state["messages"].append({"role": "assistant", "content": f"use {tool}", "n": n})
        state["messages"].append({"role": "tool", "content": result["output"]})
        state["notes"][f"step_{n}"] = seed[24:32]
        state["total"] += result["value"]
        if n % 10 == 0:
            # A large tool output every tenth step: it goes to the blob store.
            state["document"] = f"page {n}: " + seed * 80
        if self.marker:
            state["by"] = self.marker
        return state


def make_step(*, marker: str = "", effects: Path | None = None, hold_in: int | None = None) -> Any:
    """The agent's step function: a scripted model picks a tool, the tool's result lands."""
    script = _Script(marker, effects, hold_in)

    def step(ctx: Any) -> Any:
        n = ctx.step
        seed, tool = script.tool_of(n)
        result = ctx.effect(f"tool-{tool}", lambda key: script.call_tool(key, tool, n))
        state = script.advance(ctx.state, n, seed, tool, result)
        if hold_in == n:
            print(f"HOLDING {n}", flush=True)
            sys.stdin.readline()
        return state

    return step


def make_async_step(
    *, marker: str = "", effects: Path | None = None, hold_in: int | None = None
) -> Any:
    """The same step for ``AsyncAgentRun``; a hold waits without blocking the event loop
    (as a step awaiting a model does), so a commit in flight goes on meanwhile."""
    script = _Script(marker, effects, hold_in)

    async def step(ctx: Any) -> Any:
        n = ctx.step
        seed, tool = script.tool_of(n)
        result = await ctx.effect(f"tool-{tool}", lambda key: script.call_tool(key, tool, n))
        state = script.advance(ctx.state, n, seed, tool, result)
        if hold_in == n:
            print(f"HOLDING {n}", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        return state

    return step


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("run_id")
    parser.add_argument("max_steps", type=int)
    parser.add_argument("--pause-after", type=int)
    parser.add_argument("--hold-in-step", type=int)
    parser.add_argument("--owner")
    parser.add_argument("--ttl", type=float, default=30.0)
    parser.add_argument("--marker", default="")
    parser.add_argument("--effects", type=Path)
    parser.add_argument("--overlap", action="store_true")
    args = parser.parse_args(argv)

    if args.overlap:
        return asyncio.run(_main_overlapped(args))
    step = make_step(marker=args.marker, effects=args.effects, hold_in=args.hold_in_step)
    with Store.connect(args.url) as store:
        run = AgentRun(
            store,
            args.run_id,
            agent_id=AGENT_ID,
            initial_state=initial_state,
            owner=args.owner,
            lease_ttl=args.ttl,
        )
        try:
            with run:
                for info in run.steps(step, max_steps=args.max_steps):
                    print(f"COMMITTED {info.step}", flush=True)
                    if info.step == args.pause_after:
                        print(f"PAUSED {info.step}", flush=True)
                        sys.stdin.readline()
        except FencedError as exc:
            print(f"FENCED {type(exc).__name__}: {exc}", flush=True)
            return 3
        print("FINAL " + json.dumps(run.state, sort_keys=True), flush=True)
    return 0


async def _main_overlapped(args: argparse.Namespace) -> int:
    step = make_async_step(marker=args.marker, effects=args.effects, hold_in=args.hold_in_step)
    async with await AsyncStore.connect(args.url) as store:
        run = AsyncAgentRun(
            store,
            args.run_id,
            agent_id=AGENT_ID,
            initial_state=initial_state,
            owner=args.owner,
            lease_ttl=args.ttl,
            overlap=True,
        )
        try:
            async with run:
                async for info in run.steps(step, max_steps=args.max_steps):
                    print(f"COMMITTED {info.step}", flush=True)
                    if info.step == args.pause_after:
                        print(f"PAUSED {info.step}", flush=True)
                        # Blocking the loop: the step after it, in flight, stays so.
                        sys.stdin.readline()
        except FencedError as exc:
            print(f"FENCED {type(exc).__name__}: {exc}", flush=True)
            return 3
        print("FINAL " + json.dumps(run.state, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
