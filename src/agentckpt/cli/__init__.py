"""The ``agentckpt`` command line."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import AgentckptError

DEFAULT_URL = "sqlite:///agentckpt-demo.db"


def _url(args: argparse.Namespace) -> str:
    return str(args.url or os.environ.get("AGENTCKPT_URL") or DEFAULT_URL)


def _demo(args: argparse.Namespace) -> int:
    from ..demo.crash import run_demo

    return 0 if run_demo(_url(args), steps=args.steps, kill_at=args.kill_at) else 1


def _migrate(args: argparse.Namespace) -> int:
    from .._sync.store import Store

    with Store.connect(_url(args), migrate=False) as store:
        applied = store.migrate()
    print(f"applied migrations: {applied or 'none (up to date)'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentckpt`` command."""
    parser = argparse.ArgumentParser(prog="agentckpt", description=__doc__)
    parser.add_argument("--url", help="store URL (default: $AGENTCKPT_URL or " + DEFAULT_URL + ")")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="kill a sample agent with SIGKILL and resume it")
    demo.add_argument("--steps", type=int, default=60)
    demo.add_argument("--kill-at", type=int, default=37)
    demo.set_defaults(func=_demo)
    migrate = sub.add_parser("migrate", help="apply pending schema migrations")
    migrate.set_defaults(func=_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except AgentckptError as exc:
        print(f"agentckpt: error: {exc}", file=sys.stderr)
        return 1
