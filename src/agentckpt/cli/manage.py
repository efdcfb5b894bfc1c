"""``agentckpt fork | delete | prune``: the commands that change runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from agentckpt.cli.command import CommandLineError, Subparsers, run_id
from agentckpt.cli.runs import add_filters, filters

if TYPE_CHECKING:
    pass


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``fork``, ``delete`` and ``prune``."""
    fork = sub.add_parser(
        "fork",
        parents=[common, listing],
        help="start a new run from a run's state at a kept step",
        description="The new run records its parent run and step and starts with one "
        "snapshot of that state (its blobs are copied with it).",
    )
    fork.add_argument("run_id", metavar="RUN", type=run_id, help="the run to fork")
    fork.add_argument("--step", type=int, help="the kept step to fork from (default: the head)")
    fork.add_argument("--new-run-id", metavar="UUID", help="the new run's id (default: random)")
    fork.set_defaults(func=fork_run)

    delete = sub.add_parser(
        "delete",
        parents=[common, listing],
        help="delete runs and everything stored for them",
        description="Each run goes at once with its steps, blobs, effects, history and "
        "events. Every RUN must exist, else nothing is deleted.",
    )
    delete.add_argument(
        "run_ids", metavar="RUN", type=run_id, nargs="+", help="runs to delete (all or none)"
    )
    delete.set_defaults(func=delete_runs)

    prune = sub.add_parser(
        "prune",
        parents=[common, listing],
        help="delete the steps before each run's newest snapshot",
        description="Pruning never removes the newest snapshot or any step after it, so "
        "every run still resumes from its head. Name runs, or use --all with filters.",
    )
    prune.add_argument(
        "run_ids", metavar="RUN", type=run_id, nargs="*", help="runs to prune (or --all)"
    )
    prune.add_argument("--all", action="store_true", help="prune every run the filters match")
    add_filters(prune)
    prune.set_defaults(func=prune_runs)


def fork_run(args: argparse.Namespace) -> int:
    """Fork and print the new run."""
    from agentckpt.cli.output import print_json
    from agentckpt.cli.target import open_store, store_url

    with open_store(store_url(args)) as store:
        fork = store.fork(args.run_id, args.step, new_run_id=args.new_run_id)
    if args.json:
        print_json(
            {
                "run_id": fork.run_id,
                "parent_run_id": fork.parent_run_id,
                "parent_step": fork.parent_step,
            }
        )
    else:
        print(f"forked run {fork.parent_run_id} at step {fork.parent_step} into {fork.run_id}")
    return 0


def delete_runs(args: argparse.Namespace) -> int:
    """Delete the named runs, all or none."""
    from agentckpt.cli.output import print_json
    from agentckpt.cli.target import open_store, store_url

    with open_store(store_url(args)) as store:
        # Check them all first: a typo in the third id must not leave two runs deleted.
        runs = [store.get_run(run_id) for run_id in args.run_ids]
        for run in runs:
            store.delete_run(run.run_id)
    if args.json:
        print_json({"deleted": [run.run_id for run in runs]})
    else:
        for run in runs:
            print(f"deleted run {run.run_id}")
    return 0


def prune_runs(args: argparse.Namespace) -> int:
    """Prune the named runs, or every run the filters select."""
    from agentckpt.cli.output import print_json, print_table
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.views import run_summaries

    chosen: dict[str, Any] = filters(args)
    if args.run_ids and (args.all or any(v is not None for v in chosen.values())):
        raise CommandLineError("name runs or use --all with filters, not both")
    if not args.run_ids and not args.all:
        raise CommandLineError("name the runs to prune, or pass --all (with filters if wanted)")
    results: list[tuple[Any, int]] = []
    with open_store(store_url(args)) as store:
        if args.all:
            targets = [s.run_id for s in run_summaries(store, limit=None, **chosen)]
        else:
            targets = [store.get_run(run_id).run_id for run_id in args.run_ids]
        for run_id in targets:
            results.append((run_id, store.prune(run_id)))
    if args.json:
        print_json([{"run_id": run_id, "pruned_steps": count} for run_id, count in results])
    else:
        print_table(("RUN", "PRUNED STEPS"), results)
        print(f"pruned {sum(count for _, count in results)} steps in {len(results)} runs")
    return 0
