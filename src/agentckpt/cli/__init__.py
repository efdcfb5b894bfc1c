"""The ``agentckpt`` command line: demo, schema, states, runs, export/import, stats,
retention, metrics, doctor, verify, inspector.

The store is chosen with ``--url`` (before or after the command) or ``$AGENTCKPT_URL``.
Every listing prints a table, or JSON with ``--json``. An error is one line on stderr
saying what to do, with exit status 1 (2 for a bad command line); never a traceback for
an :class:`~agentckpt.AgentckptError` or a bad argument.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from agentckpt._version import __version__
from agentckpt.cli import (
    bench,
    demo,
    doctor,
    extras,
    keys,
    manage,
    metrics,
    migrate,
    migrate_states,
    retention,
    runs,
    stats,
    transfer,
    verify,
    web,
)
from agentckpt.cli.command import EXIT_ERROR, EXIT_USAGE, CommandLineError, Parser
from agentckpt.demo.crash import DemoError
from agentckpt.errors import AgentckptError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentckpt`` command."""
    parser = Parser(
        prog="agentckpt",
        description="Crash-proof checkpoints for LLM agents: inspect and manage a store.",
        epilog="The store: --url URL or $AGENTCKPT_URL (sqlite:///path.db, postgresql://...).",
    )
    parser.add_argument(
        "--url", help="store URL (default: $AGENTCKPT_URL); also accepted after the command"
    )
    parser.add_argument(
        "--tenant",
        help="work on this tenant's runs only (default: $AGENTCKPT_TENANT, else 'default'); "
        "also accepted after the command",
    )
    parser.add_argument("--version", action="version", version=f"agentckpt {__version__}")
    # Subcommands repeat --url so `agentckpt runs list --url ...` works too; SUPPRESS
    # keeps an absent one from overwriting the value given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="store URL")
    common.add_argument("--tenant", default=argparse.SUPPRESS, help="the tenant to work on")
    listing = argparse.ArgumentParser(add_help=False)
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        demo,
        migrate,
        migrate_states,
        runs,
        manage,
        transfer,
        stats,
        retention,
        metrics,
        doctor,
        verify,
        keys,
        web,
        bench,
    ):
        module.register(sub, common, listing)
    extras.register(sub, common, listing)
    return parser


# The top parser's own options: those that take a value, and those that end parsing.
_TOP_VALUED = ("--url", "--tenant")
_TOP_FINAL = ("-h", "--help", "--version")


def _unknown_top_option(arguments: Sequence[str]) -> str | None:
    """The first option before the command that the top parser does not know, if any."""
    skip = False
    for token in arguments:
        if skip:
            skip = False
            continue
        if not token.startswith("-") or token == "-" or token in _TOP_FINAL:
            return None
        if token == "--":
            return None
        name = token.split("=", 1)[0]
        if name in _TOP_VALUED:
            skip = "=" not in token
            continue
        return name
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["bench"]:
        # The benchmark parses its own options (argparse cannot pass them through).
        return bench.run(argparse.Namespace(options=arguments[1:]))
    parser = build_parser()
    stray = _unknown_top_option(arguments)
    if stray is not None:
        # Else argparse takes the option's value for the command ("invalid choice:
        # 'sqlite:///x.db'"), which hides the real mistake.
        print(
            f"agentckpt: error: unrecognized option {stray} before the command "
            "(the store is --url URL; see `agentckpt --help`)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # Known args first: argparse reports a subcommand's unknown option from the top
    # parser ("agentckpt: error: ..."), which does not say which command refused it.
    args, unknown = parser.parse_known_args(arguments)
    name = " ".join(
        str(part)
        for part in (
            args.command,
            getattr(args, "runs_command", None),
            getattr(args, "sub_command", None),
        )
        if part
    )
    if unknown:
        print(
            f"agentckpt {name}: error: unrecognized arguments: {' '.join(unknown)} "
            f"(see `agentckpt {name} --help`)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except CommandLineError as exc:
        print(f"agentckpt {name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (AgentckptError, DemoError) as exc:
        print(f"agentckpt {name}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            # The reader (e.g. `| head`) went away: point stdout at /dev/null so the
            # flush at exit does not fail a second time, and stop quietly.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_ERROR
        where = f" {exc.filename}" if exc.filename else ""
        print(f"agentckpt {name}: error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"agentckpt {name}: interrupted", file=sys.stderr)
        return 130
