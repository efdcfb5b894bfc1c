"""``agentckpt migrate-states``: upgrade stored states to the current state version.

``agentckpt migrate`` upgrades the database schema; this command upgrades what the runs
store. For every run of a kind with registered state migrations (conversations, built
in; any other kind with ``--migrations KIND=MODULE:NAME``, a
:class:`~agentckpt.StateMigrations` of the application's), it reads the head state,
upgrades it and commits it as a new step (an open head, a turn in progress, is rewritten
in place and stays open). Each commit is guarded like any other: it names the head it
read and the run's lease epoch, so a run that a writer moved meanwhile, or that a worker
holds a live lease on, is reported as a conflict and left as it is, never overwritten.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentckpt._core.versions import StateMigrations
from agentckpt.cli.command import EXIT_ERROR, CommandLineError, Subparsers, positive_int, run_id
from agentckpt.errors import AgentckptError, ConflictError, RunNotFoundError
from agentckpt.ops import queries
from agentckpt.store.store import Store

CONVERSATION = "conversation"


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add the ``migrate-states`` command."""
    cmd = sub.add_parser(
        "migrate-states",
        parents=[common, listing],
        help="upgrade stored states to the current state version (`migrate` is the schema)",
        description="Upgrade the head state of every run of a kind with registered state "
        "migrations (conversations, built in; other kinds with --migrations) and commit it "
        "as a new step. A run that moves meanwhile, or that a worker holds a live lease "
        "on, is a conflict: it is left as it is and reported. Exit status 1 when a state "
        "could not be upgraded (a conflict: run the command again; or a failure).",
    )
    cmd.add_argument(
        "run_ids", metavar="RUN", type=run_id, nargs="*", help="only these runs (default: all)"
    )
    cmd.add_argument(
        "--kind",
        action="append",
        metavar="KIND",
        help="only runs of this kind (repeatable; default: every kind with migrations)",
    )
    cmd.add_argument("--agent", metavar="AGENT_ID", help="only runs of this agent")
    cmd.add_argument(
        "--migrations",
        action="append",
        default=[],
        metavar="KIND=MODULE:NAME",
        help="the state migrations of runs of KIND: a StateMigrations (or a function "
        "returning one) named NAME in the importable module MODULE (repeatable)",
    )
    cmd.add_argument(
        "--dry-run",
        action="store_true",
        help="write nothing: list the states that would be upgraded, from and to which version",
    )
    cmd.add_argument(
        "--batch-size",
        type=positive_int,
        default=500,
        metavar="N",
        help="runs read per query while finding old states (500)",
    )
    cmd.set_defaults(func=run)


@dataclass(slots=True)
class Outcome:
    """What happened to one run."""

    run_id: UUID
    kind: str
    agent_id: str
    step: int | None = None
    from_version: int | None = None
    to_version: int | None = None
    new_step: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The outcome for ``--json``, without the fields that do not apply."""
        data = {
            "run_id": str(self.run_id),
            "kind": self.kind,
            "agent_id": self.agent_id,
            "step": self.step,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "new_step": self.new_step,
            "reason": self.reason,
        }
        return {k: v for k, v in data.items() if v is not None or k == "step"}


@dataclass(slots=True)
class Report:
    """Every run looked at, by outcome."""

    dry_run: bool
    upgraded: list[Outcome] = field(default_factory=list)
    current: list[Outcome] = field(default_factory=list)
    conflicts: list[Outcome] = field(default_factory=list)
    failed: list[Outcome] = field(default_factory=list)

    @property
    def scanned(self) -> int:
        """Runs looked at."""
        return len(self.upgraded) + len(self.current) + len(self.conflicts) + len(self.failed)

    def to_json(self) -> dict[str, Any]:
        """The report for ``--json``."""
        return {
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "upgraded" if not self.dry_run else "would_upgrade": [
                o.to_json() for o in self.upgraded
            ],
            "already_current": len(self.current),
            "conflicts": [o.to_json() for o in self.conflicts],
            "failed": [o.to_json() for o in self.failed],
        }


def registered_migrations(specs: list[str]) -> dict[str, StateMigrations]:
    """The conversation format's upgrades, and those named with ``--migrations``."""
    from agentckpt.conversation import state_migrations

    found: dict[str, StateMigrations] = {CONVERSATION: state_migrations()}
    for spec in specs:
        kind, sep, target = spec.partition("=")
        module_name, colon, name = target.partition(":")
        if not sep or not colon or not kind or not module_name or not name:
            raise CommandLineError(
                f"--migrations {spec!r}: expected KIND=MODULE:NAME, "
                "e.g. run=myapp.states:MIGRATIONS"
            )
        found[kind] = _load(spec, module_name, name)
    return found


def _load(spec: str, module_name: str, name: str) -> StateMigrations:
    # The command is usually run from the application's directory, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandLineError(
            f"--migrations {spec!r}: cannot import {module_name}: {exc}"
        ) from None
    value = getattr(module, name, None)
    if callable(value) and not isinstance(value, StateMigrations):
        value = value()
    if not isinstance(value, StateMigrations):
        raise CommandLineError(
            f"--migrations {spec!r}: {module_name}.{name} is not a StateMigrations "
            f"(nor a function returning one), it is {type(value).__name__}"
        )
    return value


def _candidates(
    store: Store, kind: str, migrations: StateMigrations, agent: str | None, batch: int
) -> Iterator[UUID]:
    """Runs of ``kind`` whose head step recorded an older version, in run id order."""
    after: UUID | None = None
    while True:
        rows = store.backend.read(
            queries.STATES_TO_UPGRADE,
            {
                "kind": kind,
                "current": migrations.current,
                "agent_id": agent,
                "after": after,
                "limit": batch,
            },
        )
        for row in rows:
            after = row["run_id"]
            yield row["run_id"]
        if len(rows) < batch:
            return


def _lease_is_live(owner: str | None, expires_at: datetime | None) -> bool:
    return owner is not None and expires_at is not None and expires_at > datetime.now(UTC)


def upgrade_run(
    store: Store,
    rid: UUID,
    registry: dict[str, StateMigrations],
    *,
    dry_run: bool,
) -> tuple[str, Outcome]:
    """Upgrade one run's head state (or, with ``dry_run``, say what would change).

    Returns the outcome and where it belongs: ``upgraded``, ``current``, ``conflicts``
    or ``failed``.
    """
    run, checkpoint = store.resume_run(rid)
    outcome = Outcome(run_id=rid, kind=run.kind, agent_id=run.agent_id, step=run.head_step)
    migrations = registry.get(run.kind)
    if migrations is None:
        outcome.reason = (
            f"no state migrations for runs of kind {run.kind!r} "
            f"(pass --migrations {run.kind}=MODULE:NAME)"
        )
        return "failed", outcome
    if checkpoint is None:
        return "current", outcome  # no state yet: the first commit writes the current one
    outcome.from_version = migrations.version_of(checkpoint.state)
    try:
        state, changed = migrations.upgrade(checkpoint.state)
    except AgentckptError as exc:
        outcome.reason = str(exc)
        return "failed", outcome
    except Exception as exc:  # an application's upgrade function failed
        outcome.reason = f"the upgrade raised {type(exc).__name__}: {exc}"
        return "failed", outcome
    if not changed:
        return "current", outcome
    outcome.to_version = migrations.current
    head = checkpoint.step
    is_open = checkpoint.info.is_open
    outcome.new_step = head if is_open else head + 1
    if _lease_is_live(run.lease_owner, run.lease_expires_at):
        outcome.reason = (
            f"{run.lease_owner} holds a live lease on the run (until "
            f"{run.lease_expires_at}); run the command again once it is released"
        )
        return "conflicts", outcome
    if dry_run:
        return "upgraded", outcome
    try:
        # Guarded like any commit: against the head this read (a writer that moved the
        # run wins), and fenced by the lease epoch (a worker that took the lease wins).
        store.commit(
            rid,
            state,
            step=outcome.new_step,
            keep_open=is_open,
            expected_head=head,
            epoch=run.lease_epoch,
        )
    except ConflictError as exc:
        outcome.reason = f"{exc} (the run moved meanwhile: run the command again)"
        return "conflicts", outcome
    except AgentckptError as exc:
        outcome.reason = str(exc)
        return "failed", outcome
    return "upgraded", outcome


def migrate_states(
    store: Store,
    registry: dict[str, StateMigrations],
    *,
    kinds: list[str],
    agent: str | None = None,
    run_ids: list[str] | None = None,
    dry_run: bool = False,
    batch_size: int = 500,
    on_total: Callable[[int], None] | None = None,
    on_run: Callable[[Outcome], None] | None = None,
) -> Report:
    """Upgrade the selected runs; ``on_total(n)`` once the candidates are known."""
    report = Report(dry_run=dry_run)
    if run_ids:
        selected = [store.get_run(r) for r in run_ids]  # RunNotFoundError for a typo
        chosen = [
            r.run_id
            for r in selected
            if (not kinds or r.kind in kinds) and (agent is None or r.agent_id == agent)
        ]
    else:
        chosen = [
            rid
            for kind in kinds
            for rid in _candidates(store, kind, registry[kind], agent, batch_size)
        ]
    if on_total:
        on_total(len(chosen))
    for rid in chosen:
        try:
            bucket, outcome = upgrade_run(store, rid, registry, dry_run=dry_run)
        except RunNotFoundError:
            continue  # deleted meanwhile: nothing to upgrade
        except AgentckptError as exc:  # a state that cannot be read (corrupt, say)
            bucket, outcome = "failed", Outcome(run_id=rid, kind="", agent_id="", reason=str(exc))
        getattr(report, bucket).append(outcome)
        if on_run:
            on_run(outcome)
    return report


def run(args: argparse.Namespace) -> int:
    """Upgrade (or list, with --dry-run) the old states; exit 1 if any could not be."""
    from agentckpt.cli.output import Progress, print_json, print_table
    from agentckpt.cli.target import open_store, store_url

    registry = registered_migrations(args.migrations)
    kinds = list(args.kind or [])
    unknown = [k for k in kinds if k not in registry]
    if unknown:
        raise CommandLineError(
            f"no state migrations for runs of kind {unknown[0]!r}: pass "
            f"--migrations {unknown[0]}=MODULE:NAME"
        )
    if not kinds and not args.run_ids:
        kinds = sorted(registry)
    bar = Progress("migrate-states", None)
    with open_store(store_url(args), writable=not args.dry_run) as store, bar:

        def total(n: int) -> None:
            bar.total = n

        report = migrate_states(
            store,
            registry,
            kinds=kinds,
            agent=args.agent,
            run_ids=args.run_ids,
            dry_run=args.dry_run,
            batch_size=args.batch_size,
            on_total=total,
            on_run=lambda o: bar.advance(note=str(o.run_id)[:8]),
        )
    if args.json:
        print_json(report.to_json())
    else:
        _print_report(report, print_table)
    return EXIT_ERROR if report.conflicts or report.failed else 0


def _print_report(report: Report, print_table: Callable[..., None]) -> None:
    verb = "would upgrade" if report.dry_run else "upgraded"
    if report.upgraded:
        print_table(
            ["RUN", "KIND", "AGENT", "STEP", "FROM", "TO", "NEW STEP"],
            [
                (o.run_id, o.kind, o.agent_id, o.step, o.from_version, o.to_version, o.new_step)
                for o in report.upgraded
            ],
        )
    for o in report.conflicts:
        print(f"conflict: run {o.run_id}: {o.reason}")
    for o in report.failed:
        print(f"failed: run {o.run_id}: {o.reason}")
    print(
        f"{verb} {len(report.upgraded)} states, {len(report.current)} already current, "
        f"{len(report.conflicts)} conflicts, {len(report.failed)} failed"
        f" ({report.scanned} runs looked at)"
    )
