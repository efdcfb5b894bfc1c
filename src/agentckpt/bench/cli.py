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
import json
import re
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentckpt.bench.errors import BenchmarkError
from agentckpt.bench.extra import missing_extra

if TYPE_CHECKING:
    from agentckpt.bench.runner import BenchConfig

__all__ = ["build_parser", "main"]

_QUICK = {"agents": 4, "turns": 3, "steps": 30, "pace_scale": 0.01, "rounds": 1, "run_resumes": 5}
_FULL = {
    "agents": 100,
    "turns": 30,
    "steps": 1000,
    "pace_scale": 1.0,
    "rounds": 3,
    "run_resumes": 200,
}
_SUBJECTS = ("agentckpt", "seed000", "floor", "langgraph")
# Opt-in subjects: agentckpt with encryption at rest (--encryption adds it).
_EXTRA_SUBJECTS = ("agentckpt_enc",)


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
        choices=("sqlite", "postgres", "both"),
        default="both",
        help="where to run (default both)",
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
        help=f"comma-separated subset of {','.join(_SUBJECTS + _EXTRA_SUBJECTS)}",
    )
    parser.add_argument(
        "--encryption",
        action="store_true",
        help="also run agentckpt with encryption at rest (the agentckpt_enc column)",
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
    if args.encryption and "agentckpt_enc" not in subjects:
        subjects = (*subjects, "agentckpt_enc")
    unknown = sorted(set(subjects) - set(_SUBJECTS + _EXTRA_SUBJECTS))
    if unknown:
        raise BenchmarkError(
            f"--subjects: unknown {', '.join(unknown)}; choose from {_SUBJECTS + _EXTRA_SUBJECTS}"
        )
    for key in ("agents", "turns", "steps", "rounds", "run_resumes"):
        if int(sizes[key]) < 1:
            raise BenchmarkError(f"--{key.replace('_', '-')} must be at least 1")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,30}", args.schema_prefix):
        raise BenchmarkError("--schema-prefix must be a short lowercase identifier")
    if float(sizes["pace_scale"]) < 0 or args.pool_size < 1:
        raise BenchmarkError("--pace-scale must be >= 0 and --pool-size >= 1")
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
    )


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
    try:
        config = _config(args)
    except BenchmarkError as exc:
        parser.error(str(exc))

    # Only now: these modules import psycopg (the bench extra).
    from agentckpt.bench.environment import describe_environment
    from agentckpt.bench.report import render, to_json
    from agentckpt.bench.runner import run_benchmark

    def log(line: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    started = time.time()
    try:
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
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(results, settings), indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    return 1 if any(r.errors for r in results) else 0
