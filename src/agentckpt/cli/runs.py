"""``agentckpt runs list | show | diff``: what a store holds, run by run."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from typing import Any

from agentckpt.cli.command import Subparsers, cursor, duration, run_id
from agentckpt.ops import kinds

# The statuses agentckpt itself sets, and the kinds of run it stores: what --status and
# --kind accept (a typo is an error, not an empty listing).
STATUSES = ("active", "completed", "failed")
KINDS = (kinds.RUN, kinds.CONVERSATION, kinds.LANGGRAPH, kinds.SESSION)


def page_limit(text: str) -> int:
    """An argparse type for ``--limit``: 0 (no limit) or a positive count."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative (0 means no limit)")
    return value


def add_filters(cmd: argparse.ArgumentParser) -> None:
    """The run filters shared by listings, export, prune and stats."""
    cmd.add_argument("--agent", metavar="AGENT_ID", help="only runs of this agent id")
    cmd.add_argument(
        "--status", choices=STATUSES, help=f"only runs with this status ({', '.join(STATUSES)})"
    )
    cmd.add_argument("--kind", choices=KINDS, help=f"only runs of this kind ({', '.join(KINDS)})")
    cmd.add_argument(
        "--older-than",
        type=duration,
        metavar="AGE",
        help="only runs not updated for AGE (30s, 15m, 1h, 7d, 2w)",
    )


def filters(args: argparse.Namespace) -> dict[str, Any]:
    """The filter arguments as keyword arguments of ``catalog.run_summaries``."""
    return {
        "agent_id": args.agent,
        "status": args.status,
        "kind": args.kind,
        "idle_seconds": args.older_than,
    }


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``runs list``, ``runs show`` and ``runs diff``."""
    runs = sub.add_parser("runs", help="list runs, show one, diff two of its steps")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="SUBCOMMAND")

    lister = runs_sub.add_parser(
        "list", parents=[common, listing], help="runs with status and size, newest first"
    )
    add_filters(lister)
    lister.add_argument(
        "--limit",
        type=page_limit,
        default=100,
        help="runs per page (0: all; default 100); a line then says how many more match",
    )
    lister.add_argument(
        "--after",
        metavar="CURSOR",
        type=cursor,
        help="start after this cursor (the one the previous page's last line names)",
    )
    lister.add_argument(
        "--ids",
        action="store_true",
        help="print only run ids, one per line (the more line goes to stderr)",
    )
    lister.set_defaults(func=list_runs)

    show = runs_sub.add_parser(
        "show",
        parents=[common, listing],
        help="a run's record, config, tool registry, metadata, sizes and steps",
    )
    show.add_argument("run_id", metavar="RUN", type=run_id, help="the run's id")
    show.set_defaults(func=show_run)

    diff = runs_sub.add_parser(
        "diff",
        parents=[common, listing],
        help="the JSON Patch (RFC 6902) from one kept step's state to another's",
    )
    diff.add_argument("run_id", metavar="RUN", type=run_id, help="the run's id")
    diff.add_argument("step_a", metavar="STEP_A", type=int, help="the kept step to diff from")
    diff.add_argument("step_b", metavar="STEP_B", type=int, help="the kept step to diff to")
    diff.set_defaults(func=diff_steps)


def list_runs(args: argparse.Namespace) -> int:
    """Print a page of runs, newest update first, and how many more match."""
    from agentckpt.cli.output import format_time, print_json, print_table
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.units import human_bytes
    from agentckpt.ops.views import MAX_PAGE, RunFilter, page_runs

    where = RunFilter(
        kind=args.kind, status=args.status, agent_id=args.agent, idle_seconds=args.older_than
    )
    listed: list[Any] = []
    after = args.after
    with open_store(store_url(args)) as store:
        # --limit 0 walks every page; otherwise one page of --limit runs.
        while True:
            want = MAX_PAGE if args.limit == 0 else min(MAX_PAGE, args.limit - len(listed))
            page = page_runs(store, where, after=after, limit=want)
            matching = page.matching
            listed.extend(page.runs)
            after = page.next
            if after is None or (args.limit and len(listed) >= args.limit):
                break
    cursor = after.to_text() if after is not None else None
    hint = None
    if cursor is not None:
        # The count is exact from the first page; past a cursor the runs before it are
        # not known to this call, so only "more" is said.
        more = f"{matching - len(listed)} more" if args.after is None else "more runs"
        hint = f"{more}; use --after {cursor}"
    found = [entry.summary for entry in listed]
    if args.json:
        print_json({"runs": [s.to_json() for s in found], "matching": matching, "next": cursor})
        return 0
    if args.ids:
        for summary in found:
            print(summary.run_id)
        if hint:
            print(hint, file=sys.stderr)
        return 0
    print_table(
        ("RUN", "KIND", "AGENT", "STATUS", "STEP", "ROWS", "STORED", "UPDATED"),
        (
            (
                s.run_id,
                s.kind,
                s.agent_id or "-",
                s.status,
                s.head_step,
                s.rows,
                human_bytes(s.stored_bytes),
                format_time(s.updated_at),
            )
            for s in found
        ),
    )
    if hint:
        print(hint)
    return 0


def _tool_registry(config: dict[str, Any], state: Any) -> Any:
    """The tool registry recorded with the run: in its config, else in its latest state."""
    for source in (config, state if isinstance(state, dict) else {}):
        for key in ("tool_registry", "tools"):
            if key in source:
                return source[key]
    return None


def show_run(args: argparse.Namespace) -> int:
    """Print one run in full."""
    from agentckpt.cli.output import format_time, print_fields, print_json, print_table
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.units import human_bytes
    from agentckpt.ops.views import run_summaries, stored_state
    from agentckpt.redaction import RECORD_PREFIX, records_in

    with open_store(store_url(args)) as store:
        run = store.get_run(args.run_id)
        steps = store.steps(run.run_id)
        summary = run_summaries(store, run_id=run.run_id, limit=1)[0]
        latest = stored_state(store, run.run_id)
    tools = _tool_registry(run.config, latest.state if latest else None)
    redacted = records_in(run.metadata)
    metadata = {k: v for k, v in run.metadata.items() if not k.startswith(RECORD_PREFIX)}
    if args.json:
        print_json(
            {
                "run": asdict(run),
                "sizes": summary.to_json(),
                "tool_registry": tools,
                "steps": [asdict(info) for info in steps],
                "redactions": {
                    str(step): [r.to_json() for r in found] for step, found in redacted.items()
                },
            }
        )
        return 0
    expires = format_time(run.lease_expires_at) if run.lease_expires_at else "-"
    lease = f"{run.lease_owner} until {expires} (epoch {run.lease_epoch})"
    print_fields(
        [
            ("run", run.run_id),
            ("kind", run.kind),
            ("tenant", run.tenant_id),
            ("agent", run.agent_id or "-"),
            ("status", run.status + (f" ({run.error})" if run.error else "")),
            ("head step", f"{run.head_step}{' (open)' if run.head_open else ''}"),
            ("snapshot step", run.snapshot_step),
            (
                "forked from",
                f"{run.parent_run_id} at step {run.parent_step}" if run.parent_run_id else None,
            ),
            ("lease", lease if run.lease_owner else None),
            ("created", format_time(run.created_at)),
            ("updated", format_time(run.updated_at)),
            ("heartbeat", format_time(run.heartbeat_at)),
            (
                "stored",
                f"{human_bytes(summary.stored_bytes)} in {summary.rows} rows "
                f"(steps {human_bytes(summary.step_bytes)} in {summary.step_rows}, "
                f"blobs {human_bytes(summary.blob_bytes)} in {summary.blob_rows}, "
                f"history {human_bytes(summary.history_bytes)} in {summary.history_rows})",
            ),
            (
                "per step",
                human_bytes(int(summary.bytes_per_step)) if summary.bytes_per_step else None,
            ),
        ]
    )
    for title, value in (("config", run.config), ("tool registry", tools)):
        print(f"\n{title}:")
        print(_pretty(value) if value not in (None, {}) else "  (none)")
    print("\nmetadata:")
    print(_pretty(metadata) if metadata else "  (none)")
    # Paths and kinds only: the values were never stored.
    print(f"\nredacted ({sum(len(found) for found in redacted.values())}):")
    if not redacted:
        print("  (none)")
    for step, found in redacted.items():
        for record in found:
            print(f"  step {step}  {record.path}  {record.kind}")
    print(f"\nkept steps ({len(steps)}):")
    print_table(
        ("STEP", "KIND", "PARENT", "OPEN", "CODEC", "RAW", "STORED", "STATE", "WRITES", "CREATED"),
        (
            (
                info.step,
                info.kind,
                info.parent_step,
                info.is_open,
                info.codec,
                info.raw_bytes,
                info.stored_bytes,
                info.state_bytes,
                info.write_version,
                format_time(info.created_at),
            )
            for info in steps
        ),
    )
    return 0


def _pretty(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return "\n".join("  " + line for line in text.splitlines())


_COLORS = {"add": "32", "remove": "31", "replace": "33", "move": "36", "copy": "36"}
_MARKS = {"add": "+", "remove": "-", "replace": "~", "move": ">", "copy": "="}


def diff_steps(args: argparse.Namespace) -> int:
    """Print the patch that turns the state at STEP_A into the state at STEP_B."""
    from agentckpt._core.delta import diff
    from agentckpt.cli.output import print_json
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.views import stored_state

    with open_store(store_url(args)) as store:
        before = stored_state(store, args.run_id, args.step_a)
        after = stored_state(store, args.run_id, args.step_b)
    assert before is not None
    assert after is not None
    patch = diff(before.state, after.state)
    if args.json:
        print_json(patch)
        return 0
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    print(
        f"run {before.run_id}: step {args.step_a} -> step {args.step_b}, "
        f"{len(patch)} operation{'s' if len(patch) != 1 else ''}"
    )
    for op in patch:
        name = op["op"]
        text = f"{_MARKS.get(name, '?')} {name} {op['path']}"
        if "from" in op:
            text += f" (from {op['from']})"
        if "value" in op:
            compact = json.dumps(op["value"], ensure_ascii=False)
            if len(compact) <= 100:
                text += f": {compact}"
            else:
                text += ":\n" + _pretty(op["value"])
        if color:
            text = f"\033[{_COLORS.get(name, '0')}m{text}\033[0m"
        print(text)
    return 0
