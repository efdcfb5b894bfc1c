"""``agentckpt bench``: the benchmark, with its own options (``agentckpt bench --help``)."""

from __future__ import annotations

import argparse

from agentckpt.cli.command import Subparsers


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``bench``; everything after it goes to the benchmark's own parser."""
    cmd = sub.add_parser(
        "bench",
        add_help=False,
        help="measure agentckpt side by side with its baselines (see docs/benchmarks.md)",
        description="Run `agentckpt bench --help` for the benchmark's options.",
    )
    cmd.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's options")
    cmd.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Hand the remaining arguments to :func:`agentckpt.bench.cli.main`."""
    from agentckpt.bench.cli import main

    return main(list(args.options))
