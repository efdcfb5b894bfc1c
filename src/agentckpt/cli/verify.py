"""``agentckpt verify URL``: a durability self-test against the user's own database.

It runs the deterministic agent of :mod:`agentckpt.cli.verify_agent` in a child process,
kills it with SIGKILL at a random instant, resumes it in a new child, and so on
``--kills`` times, checking after every kill, from the store and the agent's call ledger
alone, that nothing acknowledged was lost, the state is exactly the uncrashed agent's,
and no external call was made again once its result was recorded. Everything it writes
goes to a scratch place it creates and removes: a schema ``agentckpt_verify_<hex>`` on
PostgreSQL, a file beside the store's on SQLite (same directory, so the same disk).

Children are forked from a forkserver that has agentckpt imported already, so a life
costs milliseconds to start, not an interpreter start; each is a real process, killed
with SIGKILL with no chance to clean up.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentckpt.cli.command import EXIT_ERROR, Subparsers, positive_int

# Steps per run; a run that completes is followed by a new one.
STEPS = 500
# A child is killed at a random instant up to this many seconds after it starts.
LIFE_SECONDS = 0.3
# A life that is not killed (it completed its run) must end within this.
LIFE_TIMEOUT = 60.0
SCRATCH_PREFIX = "agentckpt_verify_"


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``verify``."""
    cmd = sub.add_parser(
        "verify",
        parents=[common, listing],
        help="self-test: SIGKILL an agent N times against this database, check nothing is lost",
        description="Runs a deterministic agent (one checkpoint and one external call per "
        "step) in a child process, kills it with SIGKILL at random instants --kills times, "
        "resumes it each time, and counts acknowledged steps, lost ones, mismatched states "
        "and duplicated external calls. It works in a scratch schema (PostgreSQL) or a "
        "scratch file beside the store's (SQLite) that it creates and removes. Exit status "
        "0 when nothing was lost, mismatched or duplicated, 1 otherwise.",
    )
    cmd.add_argument("target", nargs="?", metavar="URL", help="store URL (or --url)")
    cmd.add_argument("--kills", type=positive_int, default=100, help="SIGKILLs to deliver (100)")
    cmd.add_argument(
        "--seconds",
        type=float,
        default=600.0,
        help="stop after this many seconds even if fewer kills were done (600)",
    )
    cmd.add_argument("--seed", type=int, default=None, help="seed of the kill instants (random)")
    cmd.set_defaults(func=run)


@dataclass(slots=True)
class Report:
    """What a self-test found."""

    dialect: str
    scratch: str
    kills_requested: int
    kills: int = 0
    runs: int = 0
    acknowledged: int = 0
    lost: int = 0
    mismatched: int = 0
    duplicated: int = 0
    replayed_calls: int = 0
    seconds: float = 0.0
    agent_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Pass: kills were delivered, steps acknowledged, and nothing was lost,
        mismatched or duplicated."""
        return (
            self.kills > 0
            and self.acknowledged > 0
            and not (self.lost or self.mismatched or self.duplicated)
            and not self.agent_errors
        )


class _Scratch:
    """Where the self-test writes, created on entry and removed on exit."""

    def __init__(self, url: str) -> None:
        from agentckpt._backends.factory import parse_url
        from agentckpt.errors import ConfigurationError

        target = parse_url(url)
        self.dialect = target.dialect
        self._folder: Path | None = None
        if target.dialect == "sqlite":
            if target.location == ":memory:":
                raise ConfigurationError(
                    "verify needs a database other processes can open: an in-memory SQLite "
                    "store cannot be tested"
                )
            folder = Path(target.location).resolve().parent
            if not folder.is_dir():
                raise ConfigurationError(f"no directory {folder} for the SQLite store")
            self._folder = Path(tempfile.mkdtemp(prefix=".agentckpt-verify-", dir=folder))
            self.name = str(self._folder / "verify.db")
            self.url = f"sqlite:///{self.name}"
            self.settings: dict[str, Any] = {}
        else:
            self.name = f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
            self.url = url
            self.settings = {"schema": self.name}
        self.work = Path(tempfile.mkdtemp(prefix="agentckpt-verify-"))

    def remove(self, store: Any) -> None:
        """Drop the scratch schema (PostgreSQL) and delete the scratch files."""
        import shutil

        from agentckpt.ops import queries

        try:
            if self.dialect == "postgresql" and store is not None:
                store.backend.write(queries.DROP_VERIFY_SCHEMA, {})
        finally:
            if store is not None:
                store.close()
            for folder in (self._folder, self.work):
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)


def _latest(store: Any, run_id: str) -> Any:
    """The run's head checkpoint; None also when the child died before creating it."""
    from agentckpt.errors import RunNotFoundError

    try:
        return store.latest(run_id)
    except RunNotFoundError:
        return None


def _check_head(store: Any, run_id: str, acked: int | None, report: Report) -> None:
    """After a kill: nothing acknowledged lost, and the state is the uncrashed agent's."""
    from agentckpt.cli import verify_agent as agent

    checkpoint = _latest(store, run_id)
    head = checkpoint.step if checkpoint is not None else None
    if acked is not None and (head is None or head < acked):
        report.lost += acked - (head if head is not None else -1)
    if checkpoint is None:
        return
    state = checkpoint.state
    step = checkpoint.step
    if (
        state.get("step") != step
        or state.get("trail") != agent.expected_trail(step)
        or sorted(map(int, state.get("calls", {}))) != list(range(1, step + 1))
    ):
        report.mismatched += 1


def _check_calls(store: Any, run_id: str, ledger: str, report: Report) -> None:
    """After a run: no call was made again once its result was recorded."""
    from agentckpt.cli import verify_agent as agent
    from agentckpt.runs import idempotency_key

    checkpoint = _latest(store, run_id)
    if checkpoint is None:
        return
    calls = agent.read_ledger(ledger)
    for number, token in checkpoint.state["calls"].items():
        made = calls.get(idempotency_key(uuid.UUID(run_id), int(number), agent.EFFECT), [])
        if token not in made:
            report.mismatched += 1  # the state names a call that never happened
            continue
        position = made.index(token)
        report.replayed_calls += position
        report.duplicated += len(made) - position - 1


def self_test(
    url: str,
    *,
    kills: int = 100,
    seconds: float = 600.0,
    seed: int | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Report:
    """Run the self-test against ``url``; see the module docstring."""
    from agentckpt.cli import verify_agent as agent
    from agentckpt.store.store import Store

    scratch = _Scratch(url)
    report = Report(dialect=scratch.dialect, scratch=scratch.name, kills_requested=kills)
    rng = random.Random(seed)
    context = multiprocessing.get_context("forkserver")
    # Children fork from a server that has the agent and the driver imported already.
    # (A module that cannot be imported, psycopg missing, is skipped.)
    context.set_forkserver_preload(["agentckpt.cli.verify_agent", "agentckpt._backends.postgres"])
    started = time.monotonic()
    store = None
    try:
        store = Store.connect(scratch.url, **scratch.settings)
        run_id = str(uuid.uuid4())
        ledger = str(scratch.work / "ledger")
        acked: int | None = None
        report.runs = 1
        while report.kills < kills and time.monotonic() - started < seconds:
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(
                target=agent.live,
                args=(scratch.url, scratch.settings, run_id, STEPS, ledger, sender),
                daemon=True,
            )
            child.start()
            sender.close()
            life = _Life(receiver, report)
            life.listen(LIFE_TIMEOUT, until_up=True)
            life.listen(rng.uniform(0.0, LIFE_SECONDS))
            if not life.done and life.error is None and child.is_alive():
                assert child.pid is not None
                os.kill(child.pid, signal.SIGKILL)
                report.kills += 1
            child.join(LIFE_TIMEOUT)
            if child.is_alive():
                child.kill()
                child.join()
                life.error = life.error or "the agent process hung"
            life.drain()  # what it acknowledged just before the kill
            receiver.close()
            if life.last is not None:
                acked = life.last if acked is None else max(acked, life.last)
            if life.error is None and child.exitcode not in (0, -signal.SIGKILL):
                life.error = f"the agent process exited with status {child.exitcode}"
            if life.error is not None:
                report.agent_errors.append(life.error)
                break
            _check_head(store, run_id, acked, report)
            if life.done:
                _check_calls(store, run_id, ledger, report)
                run_id, acked = str(uuid.uuid4()), None
                report.runs += 1
            elif report.kills % 50 == 0:
                say(f"  {report.kills}/{kills} kills, {report.acknowledged} steps acknowledged")
        _check_calls(store, run_id, ledger, report)
    finally:
        report.seconds = round(time.monotonic() - started, 2)
        scratch.remove(store)
    return report


class _Life:
    """What one child sent: the steps it acknowledged, its end of run, its error."""

    def __init__(self, receiver: Any, report: Report) -> None:
        self._receiver = receiver
        self._report = report
        self.last: int | None = None
        self.up = False
        self.done = False
        self.error: str | None = None

    def _take(self, message: Any) -> None:
        if message == "up":
            self.up = True
        elif message == "done":
            self.done = True
        elif isinstance(message, tuple):
            self.error = str(message[1])
        else:
            self._report.acknowledged += 1
            self.last = int(message)

    def listen(self, seconds: float, *, until_up: bool = False) -> None:
        """Take messages for ``seconds``, or until the child ends its run or fails (or,
        ``until_up``, until it says it is up)."""
        deadline = time.monotonic() + seconds
        while not self.done and self.error is None and not (until_up and self.up):
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0 or not self._receiver.poll(remaining):
                    return
                self._take(self._receiver.recv())
            except (EOFError, OSError):
                return

    def drain(self) -> None:
        """Take what is left in the pipe (the child is gone)."""
        while True:
            try:
                if not self._receiver.poll(0):
                    return
                self._take(self._receiver.recv())
            except (EOFError, OSError):
                return


def run(args: argparse.Namespace) -> int:
    """Run the self-test and print what it found."""
    from agentckpt.cli.output import print_json, print_table
    from agentckpt.cli.target import store_url

    url = args.target or store_url(args)
    if not args.json:
        print(
            f"agentckpt verify: {args.kills} SIGKILLs of an agent against "
            f"{url.split('?')[0]} (scratch space, removed afterwards)",
            flush=True,
        )
    report = self_test(
        url,
        kills=args.kills,
        seconds=args.seconds,
        seed=args.seed,
        say=lambda line: None if args.json else print(line, flush=True),
    )
    if args.json:
        print_json({"ok": report.ok, **asdict(report)})
        return 0 if report.ok else EXIT_ERROR
    rows = [
        ("kills", f"{report.kills} of {report.kills_requested}"),
        ("runs", report.runs),
        ("acknowledged steps", report.acknowledged),
        ("lost", report.lost),
        ("mismatched", report.mismatched),
        ("duplicated effects", report.duplicated),
        ("replayed calls (*)", report.replayed_calls),
        ("seconds", report.seconds),
    ]  # fmt: skip
    print_table(("WHAT", "COUNT"), rows)
    print(
        "(*) calls made again because the agent died between the call and the recording of "
        "its result: the effect journal's at-least-once window, which the idempotency key "
        "closes on the external side; not a failure"
    )
    for error in report.agent_errors:
        print(f"agent error: {error}")
    if report.kills < report.kills_requested:
        print(f"(stopped after --seconds {args.seconds:g}: {report.kills} kills delivered)")
    print("PASS" if report.ok else "FAIL")
    return 0 if report.ok else EXIT_ERROR
