"""What every subcommand module shares: its parser class and its usage error."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

EXIT_ERROR = 1
EXIT_USAGE = 2

# argparse's subparsers action; its class is private, so it is typed loosely here.
Subparsers = Any


class CommandLineError(Exception):
    """A command line that cannot be run as given: exit status 2, one line on stderr."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line that says where to get help."""

    def error(self, message: str) -> NoReturn:
        """Print one line and exit with status 2 (argparse would print the whole usage)."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def duration(text: str) -> float:
    """An argparse type for ``--older-than``: seconds from ``30s``, ``15m``, ``1h``, ``7d``."""
    from agentckpt.cli.output import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_id(text: str) -> str:
    """An argparse type for RUN arguments: a run id is a UUID."""
    from uuid import UUID

    try:
        return str(UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a run id (a UUID, as `agentckpt runs list` prints them)"
        ) from None


def positive_int(text: str) -> int:
    """An argparse type for counts that must be at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def port(text: str) -> int:
    """An argparse type for ``--port``: a TCP port, 0 for any free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0 to 65535; 0: any free one)")
    return value


def cursor(text: str) -> Any:
    """An argparse type for ``--after``: the cursor a previous page printed."""
    from agentckpt.errors import InvalidValueError
    from agentckpt.ops.views import RunCursor

    try:
        return RunCursor.parse(text)
    except InvalidValueError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None
