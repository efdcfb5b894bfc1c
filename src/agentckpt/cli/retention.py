"""``agentckpt retention show | apply``: what a retention policy deletes, and doing it."""

from __future__ import annotations

import argparse
from typing import Any

from agentckpt.cli.command import Subparsers, duration


def _days(text: str) -> float:
    return duration(text) / 86400.0


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _policy_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--policy",
        metavar="FILE",
        help='a JSON file: {"default": {RULES}, "agents": {"AGENT_ID": {RULES}}}, rules '
        "ended_days, failed_days, keep_runs, history_days",
    )
    cmd.add_argument(
        "--ended-after", type=_days, metavar="AGE", help="delete ended runs idle for AGE (30d)"
    )
    cmd.add_argument(
        "--failed-after", type=_days, metavar="AGE", help="delete failed runs idle for AGE (90d)"
    )
    cmd.add_argument(
        "--keep", type=_count, metavar="K", help="keep at most K runs per agent, newest first"
    )
    cmd.add_argument(
        "--history-after",
        type=_days,
        metavar="AGE",
        help="prune kept steps before a snapshot older than AGE (time travel)",
    )
    cmd.add_argument(
        "--agent", metavar="AGENT_ID", help="the flags apply to this agent only (default: all)"
    )
    cmd.add_argument(
        "--batch-size", type=int, default=1000, help="runs per delete statement (default 1000)"
    )


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``retention show`` and ``retention apply``."""
    retention = sub.add_parser(
        "retention", help="delete old runs and prune old history by a declared policy"
    )
    retention_sub = retention.add_subparsers(
        dest="sub_command", required=True, metavar="SUBCOMMAND"
    )
    show = retention_sub.add_parser(
        "show",
        parents=[common, listing],
        help="the policy and what applying it now would delete (nothing is deleted)",
    )
    _policy_arguments(show)
    show.set_defaults(func=run_show)
    apply = retention_sub.add_parser(
        "apply",
        parents=[common, listing],
        help="apply the policy: batched deletes; active and leased runs are never deleted",
    )
    _policy_arguments(apply)
    apply.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    apply.set_defaults(func=run_apply)


def _retention(args: argparse.Namespace) -> Any:
    from agentckpt.errors import ConfigurationError
    from agentckpt.ops.retention_rules import Retention, RetentionPolicy, load_retention

    flags = RetentionPolicy(
        ended_days=args.ended_after,
        failed_days=args.failed_after,
        keep_runs=args.keep,
        history_days=args.history_after,
    )
    base = load_retention(args.policy) if args.policy else Retention()
    if flags.empty:
        if args.agent is not None:
            raise ConfigurationError("--agent names whom the rule flags apply to; give a rule")
        retention = base
    elif args.agent is not None:
        retention = Retention(default=base.default, agents={**base.agents, args.agent: flags})
    else:
        retention = Retention(default=flags, agents=base.agents)
    if retention.default.empty and all(p.empty for p in retention.agents.values()):
        raise ConfigurationError(
            "no retention rule: give --policy FILE or --ended-after, --failed-after, --keep, "
            "--history-after"
        )
    return retention


def _print_policy(retention: Any) -> None:
    from agentckpt.cli.output import print_table

    def cell(value: Any, unit: str) -> str:
        return "-" if value is None else f"{value:g} {unit}"

    rows = [("(every agent)", retention.default), *sorted(retention.agents.items())]
    print_table(
        ("AGENT", "ENDED AFTER", "FAILED AFTER", "KEEP RUNS", "HISTORY AFTER"),
        (
            (
                agent,
                cell(p.ended_days, "days"),
                cell(p.failed_days, "days"),
                p.keep_runs,
                cell(p.history_days, "days"),
            )
            for agent, p in rows
        ),
    )


def _print_report(report: Any) -> None:
    verb = "would delete" if report.dry_run else "deleted"
    by_rule = ", ".join(f"{n} {rule}" for rule, n in sorted(report.runs_deleted.items()))
    print(f"{verb} {report.total_runs} run(s){f' ({by_rule})' if by_rule else ''}")
    print(
        f"{'would prune' if report.dry_run else 'pruned'} {report.steps_pruned} step(s) "
        f"of {report.runs_pruned} run(s)"
    )
    if not report.dry_run:
        print(
            f"{report.batches} batch(es) in {report.seconds:.2f} s; longest batch "
            f"{report.longest_batch * 1000:.1f} ms"
        )


def _apply(args: argparse.Namespace, *, dry_run: bool) -> int:
    from agentckpt.cli.output import Progress, print_json
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.retention import apply_retention

    retention = _retention(args)
    with open_store(store_url(args)) as store, Progress("retention", None) as bar:
        report = apply_retention(
            store,
            retention,
            dry_run=dry_run,
            batch_size=args.batch_size,
            progress=lambda rule, count: bar.advance(count, note=rule),
        )
    if args.json:
        print_json({"policy": retention.to_json(), "report": report.to_json()})
        return 0
    _print_policy(retention)
    print()
    _print_report(report)
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print the policy and what it would delete now."""
    return _apply(args, dry_run=True)


def run_apply(args: argparse.Namespace) -> int:
    """Apply the policy."""
    return _apply(args, dry_run=args.dry_run)
