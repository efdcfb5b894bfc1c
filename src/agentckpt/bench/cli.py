"""``agentckpt bench``: measure agentckpt against its baselines, side by side.

Run as ``agentckpt bench`` (or ``python -m agentckpt.bench``)::

    agentckpt bench --quick                      # a smoke run, seconds
    agentckpt bench --backend postgres --mode saturated --json out.json
    agentckpt bench                              # the full benchmark

The parser imports nothing beyond the base install, so ``--help`` always works; a run
needs the ``bench`` extra (:mod:`agentckpt.bench.extra`) and says so in one line without it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentckpt.bench.errors import BenchmarkError
from agentckpt.bench.extra import INSTALL, missing_extra

if TYPE_CHECKING:
    from agentckpt.bench.curves.runs import CurveConfig
    from agentckpt.bench.runner import BenchConfig

__all__ = ["build_parser", "main"]

_QUICK = {
    "agents": 4,
    "turns": 3,
    "steps": 30,
    "pace_scale": 0.01,
    "rounds": 1,
    "run_resumes": 5,
    "curve_turns": 40,
    "curve_steps": 100,
    "memory_runs": 200,
}
_FULL = {
    "agents": 100,
    "turns": 30,
    "steps": 1000,
    "pace_scale": 1.0,
    "rounds": 3,
    "run_resumes": 200,
    "curve_turns": 1000,
    "curve_steps": 10_000,
    "memory_runs": 10_000,
}
_QUICK_AGENTS = (1, 4)
_FULL_AGENTS = (1, 10, 100, 1000)
# The default subjects; "all" adds the compiled LangGraph graphs (opt-in: slow).
_SUBJECTS = ("agentckpt", "seed000", "floor", "batched", "langgraph")
# Opt-in: the compiled LangGraph graphs (slow), agentckpt with encryption at rest
# (--encryption adds it).
_OPT_IN = ("graph", "graph_agentckpt", "agentckpt_enc", "agentckpt_overlap")


def build_parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog="agentckpt bench",
        description=(
            "Benchmark agentckpt against the seed 000 method (a), a bare insert of the new "
            "bytes (b, the floor) and LangGraph's checkpointers (c), on the same database, "
            "and print a side-by-side table with ratios and the targets met or missed."
        ),
    )
    parser.add_argument("--agents", type=int, help="concurrent agents (default 100)")
    parser.add_argument("--turns", type=int, help="turns per conversation (default 30)")
    parser.add_argument("--steps", type=int, help="steps of the long run (default 1000)")
    parser.add_argument(
        "--mode",
        choices=("paced", "saturated", "both"),
        default="both",
        help="paced: each agent pauses 1-3 s before a turn; saturated: no pause (default both)",
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "both", "citus"),
        default="both",
        help="where to run (default both); citus: agentckpt on --citus-url beside --pg-url "
        "(agentckpt.bench.citus)",
    )
    parser.add_argument(
        "--citus-url", help="the Citus coordinator, for --backend citus (with the citus extension)"
    )
    parser.add_argument(
        "--pg-url",
        default="postgresql://127.0.0.1:5432/test",
        help="PostgreSQL server; each subject gets its own schema bench_<subject>_<workload>",
    )
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    parser.add_argument(
        "--pace-scale", type=float, help="multiply paced-mode pauses by this (default 1.0)"
    )
    parser.add_argument(
        "--rounds", type=int, help="timed resumes of every conversation (default 3)"
    )
    parser.add_argument(
        "--run-resumes", type=int, help="timed resumes of the long run (default 200)"
    )
    parser.add_argument(
        "--pool-size",
        type=int,
        default=10,
        help="PostgreSQL connections per subject, the same for all (default 10)",
    )
    parser.add_argument(
        "--vacuum-every",
        type=float,
        default=0.5,
        help="when the PostgreSQL server's autovacuum is off, VACUUM every subject's tables "
        "this often in seconds, as autovacuum would (default 0.5; 0 disables)",
    )
    parser.add_argument(
        "--subjects",
        default=",".join(_SUBJECTS),
        help=f"comma-separated subset of {','.join(_SUBJECTS + _OPT_IN)}, or 'all' "
        f"(default: {','.join(_SUBJECTS)}; the compiled LangGraph graphs are opt-in)",
    )
    parser.add_argument(
        "--state-keys",
        default="30,300",
        help="long-run state shapes, comma-separated numbers of keys (default 30,300)",
    )
    parser.add_argument(
        "--curves", action="store_true", help="also measure and print the curves (slow)"
    )
    parser.add_argument(
        "--plots", metavar="DIR", type=Path, help="write the curves as PNGs here (implies --curves)"
    )
    parser.add_argument(
        "--curve-turns", type=int, help="turns of the commit-cost curve (default 1000)"
    )
    parser.add_argument(
        "--curve-steps", type=int, help="steps of the bytes-by-step curve (default 10000)"
    )
    parser.add_argument(
        "--memory-runs", type=int, help="active runs of the memory figure (default 10000)"
    )
    parser.add_argument(
        "--encryption",
        action="store_true",
        help="also run agentckpt with encryption at rest (the agentckpt_enc column)",
    )
    parser.add_argument(
        "--overlap",
        action="store_true",
        help=(
            "also run agentckpt with its run loop overlapping steps (AsyncAgentRun "
            "overlap=True; the agentckpt_overlap column)"
        ),
    )
    parser.add_argument(
        "--ahead",
        type=int,
        help=(
            "the overlapped run loop's window: at most this many steps computed and not "
            "yet durable (AsyncAgentRun ahead=; default: its own, 8 on PostgreSQL, 4 on "
            "SQLite); implies --overlap"
        ),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help=(
            "rounds of every workload, each subject once a round, one after the other; "
            "each figure is then the median over the rounds (default 1)"
        ),
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the results as JSON")
    parser.add_argument(
        "--keep", action="store_true", help="keep each subject's schema or file afterwards"
    )
    parser.add_argument(
        "--sqlite-dir", type=Path, help="where the SQLite files go (default: a temp dir)"
    )
    parser.add_argument(
        "--schema-prefix",
        default="bench",
        help="PostgreSQL schemas are <prefix>_<subject>_<workload> (default bench)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def _config(args: argparse.Namespace) -> BenchConfig:
    from agentckpt.bench.runner import BenchConfig

    sizes = dict(_QUICK if args.quick else _FULL)
    for key in sizes:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    subjects = tuple(s.strip() for s in args.subjects.split(",") if s.strip())
    if subjects == ("all",):
        subjects = _SUBJECTS + _OPT_IN
    if args.encryption and "agentckpt_enc" not in subjects:
        subjects = (*subjects, "agentckpt_enc")
    if (args.overlap or args.ahead is not None) and "agentckpt_overlap" not in subjects:
        subjects = (*subjects, "agentckpt_overlap")
    unknown = sorted(set(subjects) - set(_SUBJECTS + _OPT_IN))
    if unknown:
        raise BenchmarkError(
            f"--subjects: unknown {', '.join(unknown)}; choose from {_SUBJECTS + _OPT_IN} or all"
        )
    for key in (
        "agents",
        "turns",
        "steps",
        "rounds",
        "run_resumes",
        "curve_turns",
        "curve_steps",
        "memory_runs",
    ):
        if int(sizes[key]) < 1:
            raise BenchmarkError(f"--{key.replace('_', '-')} must be at least 1")
    try:
        state_keys = tuple(int(k) for k in args.state_keys.split(",") if k.strip())
    except ValueError:
        raise BenchmarkError(
            f"--state-keys: {args.state_keys!r} is not a comma-separated list of numbers"
        ) from None
    if not state_keys or min(state_keys) < 1 or len(set(state_keys)) != len(state_keys):
        raise BenchmarkError("--state-keys: give distinct numbers of keys, each at least 1")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,30}", args.schema_prefix):
        raise BenchmarkError("--schema-prefix must be a short lowercase identifier")
    if float(sizes["pace_scale"]) < 0 or args.pool_size < 1:
        raise BenchmarkError("--pace-scale must be >= 0 and --pool-size >= 1")
    if args.ahead is not None and args.ahead < 1:
        raise BenchmarkError("--ahead must be at least 1")
    if args.repeat < 1:
        raise BenchmarkError("--repeat must be at least 1")
    return BenchConfig(
        agents=int(sizes["agents"]),
        turns=int(sizes["turns"]),
        steps=int(sizes["steps"]),
        modes=("paced", "saturated") if args.mode == "both" else (args.mode,),
        backends=("sqlite", "postgresql")
        if args.backend == "both"
        else (("postgresql",) if args.backend == "postgres" else ("sqlite",)),
        pg_url=args.pg_url,
        seed=args.seed,
        pace_scale=float(sizes["pace_scale"]),
        rounds=int(sizes["rounds"]),
        run_resumes=int(sizes["run_resumes"]),
        pool_size=args.pool_size,
        subjects=subjects,
        keep=args.keep,
        sqlite_dir=args.sqlite_dir,
        schema_prefix=args.schema_prefix,
        vacuum_every=args.vacuum_every or None,
        ahead=args.ahead,
        repeat=args.repeat,
        state_keys=state_keys,
        curves=_curves(args, sizes),
    )


def _curves(args: argparse.Namespace, sizes: dict[str, Any]) -> CurveConfig | None:
    from agentckpt.bench.curves.runs import CurveConfig

    if not (args.curves or args.plots):
        return None
    return CurveConfig(
        turns=int(sizes["curve_turns"]),
        steps=int(sizes["curve_steps"]),
        agents=_QUICK_AGENTS if args.quick else _FULL_AGENTS,
        throughput_turns=20 if args.quick else 200,
        memory_runs=int(sizes["memory_runs"]),
        # 300: the nearest-rank P99 of 50 was the slowest one; of 300 it is the 4th slowest.
        resumes=5 if args.quick else 300,
        seed=args.seed,
    )


def has_matplotlib() -> bool:
    """Whether ``--plots`` can draw (matplotlib is in the bench extra)."""
    return importlib.util.find_spec("matplotlib") is not None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every subject ran, 1 when one failed, 2 on bad usage.

    Also 2, with one line on stderr naming the extra to install, when the ``bench`` extra
    is missing.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = missing_extra()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.backend == "citus":
        return _citus(parser, args)
    try:
        config = _config(args)
    except BenchmarkError as exc:
        parser.error(str(exc))
    if args.plots is not None and not has_matplotlib():
        # Said before the run, not after it: a full run takes most of an hour.
        print(f"agentckpt bench: --plots needs matplotlib: {INSTALL}", file=sys.stderr)
        return 2

    # Only now: these modules import psycopg (the bench extra).
    from agentckpt.bench.environment import describe_environment
    from agentckpt.bench.report import render, to_json
    from agentckpt.bench.runner import run_benchmark
    from agentckpt.bench.server_cpu import name_connections

    def log(line: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    started = time.time()
    try:
        # Named before any connection opens, so the server CPU probe finds them.
        with name_connections():
            results = asyncio.run(run_benchmark(config, log))
    except BenchmarkError as exc:
        print(f"agentckpt bench: {exc}", file=sys.stderr)
        return 1
    command = "agentckpt bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    settings: dict[str, Any] = {
        "command": command.strip(),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
        "environment": describe_environment(),
        "duration_s": round(time.time() - started, 1),
    }
    print(render(results))
    if args.plots is not None:
        from agentckpt.bench.curves.plots import write_plots

        for path in write_plots(results, args.plots):
            log(f"wrote {path}")
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(results, settings), indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    return 1 if any(r.errors for r in results) else 0


def _citus(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--backend citus``: agentckpt on Citus beside the single server (bench/citus.py)."""
    from agentckpt.bench.citus import compare, render

    if not args.citus_url:
        parser.error("--backend citus needs --citus-url (the coordinator)")
    quick = args.quick
    agents = args.agents or (8 if quick else 200)
    turns = args.turns or (3 if quick else 10)
    steps = args.steps or (20 if quick else 500)

    def log(line: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    result = asyncio.run(
        compare(
            pg_url=args.pg_url,
            citus_url=args.citus_url,
            agents=agents,
            turns=turns,
            steps=steps,
            pool=args.pool_size,
            prefix=args.schema_prefix,
            keep=args.keep,
            log=log,
        )
    )
    print(f"agents {agents}, turns {turns}, long-run steps {steps}, pool {args.pool_size}")
    print(render(result))
    return 0
