"""Where a commit's client CPU goes: a cProfile breakdown of one step through AgentRun
and of a bare Store.commit, and CPU per commit against state size and turn number.

Usage (from a worktree)::

    PYTHONPATH=src python scripts/profile_commit.py                 # SQLite, all parts
    PYTHONPATH=src python scripts/profile_commit.py --backend postgres
    PYTHONPATH=src python scripts/profile_commit.py --part steps --steps 400

Parts:

- ``steps``: an ``AgentRun`` of ``--steps`` steps over the long-run state (30 keys, about
  12 KB) and over a 300-key shape (about 100 KB), 1 to 3 keys replaced per step: steps/s,
  client CPU per step and the breakdown by phase.
- ``append``: a hint-free ``Store.commit`` of a full conversation-like state whose only
  change is one appended message of about 1 KB: client CPU per commit at turns 10, 500 and
  1,000 (the ratio issue 18 asks about) and the breakdown at the last turn.
- ``conversation``: the conversation API (``add_user_message`` then
  ``add_assistant_message``), CPU per turn at turns 10 and 500.

CPU is ``time.process_time`` of this process (the client; the database server's CPU is
not counted). The breakdown is cProfile's cumulative time of the functions that make up a
commit, so nested phases (encode inside diff, ...) overlap; "total" is one commit.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agentckpt import AgentRun, Conversations, Store
from agentckpt.bench.longrun import generate_long_run
from agentckpt.bench.text import TextSource

# Phase name -> (file suffix, function name) of the functions whose cumulative time it is.
PHASES: dict[str, list[tuple[str, str]]] = {
    "diff (whole state)": [("_core/delta.py", "diff")],
    "member delta (compare, encode, diff changed members)": [("_core/plan.py", "_member_delta")],
    "members replaced whole (checked, op written)": [("_core/plan.py", "_replace_op")],
    "validate": [
        ("_core/plan.py", "validate_patch"),
        ("_core/codec.py", "validate"),
        ("_core/codec.py", "valid_container"),
    ],
    "encode (whole state)": [("_core/codec.py", "encode_trusted")],
    "checksum": [
        ("_core/plan.py", "checksum"),
        ("_core/checksums.py", "replaced"),
        ("_core/checksums.py", "of"),
    ],
    "snapshot bytes (members joined)": [("_core/checksums.py", "encoding")],
    "compress": [("_core/compression.py", "pack")],
    "apply (new head)": [("_core/delta.py", "apply")],
    "plan_commit (all of the above)": [("_core/plan.py", "plan_commit")],
    "statement (backend commit_batch)": [
        ("_backends/sqlite.py", "commit_batch"),
        ("_backends/postgres.py", "commit_batch"),
    ],
    "Store.commit": [("store/store.py", "commit")],
    "group commit (queue, hand-off, statement)": [("_compat/group_commit.py", "commit")],
    "telemetry probe (enter, exit)": [
        ("telemetry/probes.py", "__enter__"),
        ("telemetry/probes.py", "__exit__"),
    ],
    "copy of the state for the step (_fresh)": [("runs/loop.py", "_fresh")],
    "changed members (loop, vs the last state)": [("runs/offload.py", "changed_members")],
    "offload scan (prepare)": [("runs/artifacts.py", "prepare")],
    "blob refs scan (ref_uris)": [("runs/offload.py", "ref_uris")],
    "effects prune": [("runs/effects.py", "prune")],
    "conversation document (to_json)": [("conversation/model.py", "to_json")],
}


PG_DSN = "postgresql://root@127.0.0.1:5432/postgres"


@contextmanager
def _store(backend: str, workdir: str) -> Iterator[Store]:
    """A fresh store: a new SQLite file, or a new PostgreSQL schema dropped afterwards."""
    name = f"profile_{uuid.uuid4().hex[:8]}"
    url = f"sqlite:///{workdir}/{name}.db" if backend == "sqlite" else f"{PG_DSN}?schema={name}"
    store = Store.connect(url)
    try:
        yield store
    finally:
        store.close()
        if backend == "postgres":
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _breakdown(profile: cProfile.Profile, count: int) -> dict[str, float]:
    """ms per commit of each phase, from the profile of ``count`` commits."""
    stats = pstats.Stats(profile)
    table: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    result: dict[str, float] = {}
    for phase, functions in PHASES.items():
        total = 0.0
        for (filename, _line, name), (_cc, _nc, _tt, cumulative, callers) in table.items():
            norm = filename.replace(os.sep, "/")
            for suffix, wanted in functions:
                if name != wanted or not norm.endswith(suffix):
                    continue
                # Recursive or nested calls of the same phase would count twice: only the
                # time of calls from outside the phase counts.
                inner = any(
                    caller[2] == wanted and caller[0].replace(os.sep, "/").endswith(suffix)
                    for caller in callers
                )
                if inner:
                    total += sum(
                        v[3]
                        for caller, v in callers.items()
                        if not (
                            caller[2] == wanted and caller[0].replace(os.sep, "/").endswith(suffix)
                        )
                    )
                else:
                    total += cumulative
        if total:
            result[phase] = 1000 * total / count
    return result


def _print_breakdown(title: str, per_commit: dict[str, float], total_ms: float) -> None:
    print(f"  {title} (cProfile on CPU time, ms per commit; profiling inflates every figure)")
    print(f"    {'total (one commit, profiled)':<44} {total_ms:8.3f}")
    for phase, ms in sorted(per_commit.items(), key=lambda item: -item[1]):
        print(f"    {phase:<44} {ms:8.3f}")


def _wide_state(rng: random.Random) -> tuple[dict[str, Any], list[Callable[[], Any]]]:
    """300 keys of about 100 KB: the long-run makers, ten of each."""
    text = TextSource(rng)
    spec = generate_long_run(0, 1)
    makers: list[Callable[[], Any]] = []
    for i, value in enumerate(spec.initial.values()):
        kind = type(value)
        if kind is str and len(value) > 200:
            makers.append(lambda: text.sentence(600, 1200))
        elif kind is str:
            makers.append(lambda: " ".join(text.words(3)))
        elif kind is list:
            makers.append(lambda: [text.sentence(20, 60) for _ in range(rng.randint(3, 6))])
        elif kind is dict:
            makers.append(lambda: {"status": "ok", "detail": text.sentence(40, 160), "attempts": 1})
        else:
            makers.append(lambda i=i: rng.randrange(1_000_000))
    makers = makers * 10
    state = {f"key_{i:03d}": make() for i, make in enumerate(makers)}
    return state, makers


def _shapes(steps: int) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    spec = generate_long_run(0, steps)
    rng = random.Random(1)
    wide, makers = _wide_state(rng)
    names = list(wide)
    changes = []
    for _ in range(steps):
        picked = rng.sample(range(len(names)), rng.randint(1, 3))
        changes.append({names[i]: makers[i]() for i in sorted(picked)})
    return {
        "30 keys (~12 KB)": (dict(spec.initial), list(spec.steps)),
        "300 keys (~100 KB)": (wide, changes),
    }


def part_steps(backend: str, workdir: str, steps: int) -> None:
    print(f"steps: AgentRun, {steps} steps, 1-3 keys replaced per step, {backend}")
    for name, (initial, changes) in _shapes(steps).items():
        for profiled in (False, True):
            with _store(backend, workdir) as store:
                run = AgentRun(store, initial_state=initial, heartbeat=False)

                def step(ctx: Any, changes: list[dict[str, Any]] = changes) -> Any:
                    ctx.state.update(changes[ctx.step - 1])
                    return ctx.state

                profile = cProfile.Profile(time.process_time)
                with run:
                    iterator = run.steps(step, max_steps=steps)
                    next(iterator)  # step 0: the initial state
                    cpu, wall = time.process_time(), time.perf_counter()
                    if profiled:
                        profile.enable()
                    count = sum(1 for _ in iterator)
                    if profiled:
                        profile.disable()
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            if profiled:
                _print_breakdown(name, _breakdown(profile, count), 1000 * cpu / count)
            else:
                print(
                    f"  {name}: {count / wall:7.0f} steps/s, client CPU "
                    f"{1000 * cpu / count:.3f} ms/step"
                )


def _message(rng: random.Random, text: TextSource, role: str) -> dict[str, Any]:
    return {
        "role": role,
        "content": text.sentence(900, 1100),
        "timestamp": f"2026-01-01T00:{rng.randrange(60):02d}:00Z",
    }


def part_append(backend: str, workdir: str, turns: int) -> None:
    print(f"append: hint-free Store.commit of the full state plus one message, {backend}")
    rng = random.Random(2)
    text = TextSource(rng)
    marks = sorted({10, min(500, turns), turns})
    window = 20
    with _store(backend, workdir) as store:
        run = store.create_run()
        state: dict[str, Any] = {"version": 2, "conversation": [], "metadata": {"tokens": 0}}
        profile = cProfile.Profile(time.process_time)
        results: dict[int, float] = {}
        done = 0
        for mark in marks:
            while done < mark - window:
                state["conversation"].append(_message(rng, text, "user"))
                store.commit(run.run_id, state)
                done += 1
            cpu = time.process_time()
            while done < mark:
                state["conversation"].append(_message(rng, text, "user"))
                state["metadata"]["tokens"] += 10
                store.commit(run.run_id, state)
                done += 1
            results[mark] = 1000 * (time.process_time() - cpu) / window
        # The breakdown: the next window, profiled (profiling inflates it).
        cpu = time.process_time()
        profile.enable()
        for _ in range(window):
            state["conversation"].append(_message(rng, text, "user"))
            state["metadata"]["tokens"] += 10
            store.commit(run.run_id, state)
        profile.disable()
        profiled_ms = 1000 * (time.process_time() - cpu) / window
        for mark in marks:
            print(
                f"  turn {mark:5d}: client CPU {results[mark]:.3f} ms/commit "
                f"({results[mark] / results[marks[0]]:.2f}x turn {marks[0]})"
            )
        _print_breakdown(
            f"turns {marks[-1]}-{marks[-1] + window}", _breakdown(profile, window), profiled_ms
        )


def part_conversation(backend: str, workdir: str, turns: int) -> None:
    print(f"conversation: add_user_message + add_assistant_message, {backend}")
    rng = random.Random(3)
    text = TextSource(rng)
    marks = sorted({10, turns})
    window = 20
    with _store(backend, workdir) as store:
        conversations = Conversations(store)
        conv = conversations.start(agent_id="profile", agent_config={"model": "m"}, tools=[])
        results: dict[int, float] = {}
        profile = cProfile.Profile(time.process_time)
        done = 0
        for mark in marks:
            while done < mark - window:
                conv.add_user_message(text.sentence(400, 600))
                conv.add_assistant_message(text.sentence(400, 600))
                done += 1
            cpu = time.process_time()
            while done < mark:
                conv.add_user_message(text.sentence(400, 600))
                conv.add_assistant_message(text.sentence(400, 600))
                done += 1
            results[mark] = 1000 * (time.process_time() - cpu) / window
        cpu = time.process_time()
        profile.enable()
        for _ in range(window):
            conv.add_user_message(text.sentence(400, 600))
            conv.add_assistant_message(text.sentence(400, 600))
        profile.disable()
        profiled_ms = 1000 * (time.process_time() - cpu) / window
        for mark in marks:
            print(
                f"  turn {mark:5d}: client CPU {results[mark]:.3f} ms/turn "
                f"({results[mark] / results[marks[0]]:.2f}x turn {marks[0]})"
            )
        _print_breakdown(
            f"turns {marks[-1]}-{marks[-1] + window} (per turn: 2 commits)",
            _breakdown(profile, window),
            profiled_ms,
        )


def main() -> None:
    """Parse the arguments and print each part's figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--part", choices=("steps", "append", "conversation", "all"), default="all")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        if args.part in ("steps", "all"):
            part_steps(args.backend, workdir, args.steps)
        if args.part in ("append", "all"):
            part_append(args.backend, workdir, args.turns)
        if args.part in ("conversation", "all"):
            part_conversation(args.backend, workdir, min(args.turns, 500))


if __name__ == "__main__":
    main()
