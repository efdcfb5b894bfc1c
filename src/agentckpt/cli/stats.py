"""``agentckpt stats``: rows and bytes per table, how fast each run grows, and with
``--costs`` tokens and cost by agent, model and day."""

from __future__ import annotations

import argparse
from typing import Any

from agentckpt.cli.command import Subparsers, run_id
from agentckpt.cli.runs import add_filters, filters, page_limit


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``stats``."""
    cmd = sub.add_parser(
        "stats",
        parents=[common, listing],
        help="storage: rows and bytes per table, and per run (bytes per step)",
        description="Totals per table (PostgreSQL: pg_total_relation_size; SQLite: the "
        "file's pages and the payload bytes), then the largest runs with their rows, "
        "stored bytes and bytes per step.",
    )
    cmd.add_argument("run_ids", metavar="RUN", type=run_id, nargs="*", help="only these runs")
    add_filters(cmd)
    cmd.add_argument(
        "--limit",
        type=page_limit,
        default=20,
        help="runs to show, largest first (0: all; default 20)",
    )
    cmd.add_argument(
        "--costs",
        action="store_true",
        help="instead: tokens and cost summed by agent, model and day (UTC) from the runs' "
        "metadata (input_tokens, output_tokens, cost_estimate_usd)",
    )
    cmd.set_defaults(func=run)


def _store_facts(store: Any, url: str) -> dict[str, Any]:
    from agentckpt.cli.target import sqlite_path
    from agentckpt.ops.views import database_size

    facts: dict[str, Any] = {"dialect": store.backend.dialect}
    facts.update(database_size(store))
    path = sqlite_path(url)
    if path is not None:
        wal = path.with_name(path.name + "-wal")
        facts["path"] = str(path.resolve())
        facts["file_bytes"] = path.stat().st_size
        facts["wal_bytes"] = wal.stat().st_size if wal.exists() else 0
    return facts


def run(args: argparse.Namespace) -> int:
    """Print storage statistics."""
    from agentckpt.cli.output import print_fields, print_json, print_table
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.units import human_bytes
    from agentckpt.ops.views import run_summaries, table_sizes

    if args.costs:
        return _costs(args)
    url = store_url(args)
    with open_store(url) as store:
        facts = _store_facts(store, url)
        tables = table_sizes(store)
        if args.run_ids:
            runs = [run_summaries(store, run_id=store.get_run(r).run_id)[0] for r in args.run_ids]
        else:
            runs = run_summaries(store, limit=None, **filters(args))
    runs.sort(key=lambda s: (-s.stored_bytes, str(s.run_id)))
    shown = runs[: args.limit] if args.limit else runs
    if args.json:
        print_json(
            {
                "store": facts,
                "tables": [
                    {
                        "table": t.table,
                        "rows": t.rows,
                        "payload_bytes": t.payload_bytes,
                        "total_bytes": t.total_bytes,
                    }
                    for t in tables
                ],
                "runs": [s.to_json() for s in shown],
            }
        )
        return 0
    pairs: list[tuple[str, Any]] = [("store", facts["dialect"])]
    if "path" in facts:
        pairs += [
            ("file", facts["path"]),
            ("file size", human_bytes(facts["file_bytes"])),
            ("write-ahead log", human_bytes(facts["wal_bytes"])),
            ("free pages", human_bytes(facts.get("free_bytes"))),
        ]
    else:
        pairs += [
            ("database", f"{facts.get('database_name')} (schema {facts.get('schema_name')})"),
            ("database size", human_bytes(facts.get("database_bytes"))),
        ]
    print_fields(pairs)
    print()
    print_table(
        ("TABLE", "ROWS", "PAYLOAD", "ON DISK"),
        (
            (t.table, t.rows, human_bytes(t.payload_bytes), human_bytes(t.total_bytes))
            for t in tables
        ),
    )
    total = human_bytes(sum(s.stored_bytes for s in runs))
    print(
        f"\n{len(runs)} run{'s' if len(runs) != 1 else ''}; {total} stored"
        + (f"; the {len(shown)} largest:" if len(shown) < len(runs) else ":")
    )
    print_table(
        ("RUN", "AGENT", "STEPS", "ROWS", "STEP BYTES", "BLOBS", "HISTORY", "TOTAL", "PER STEP"),
        (
            (
                s.run_id,
                s.agent_id or "-",
                s.head_step,
                s.rows,
                human_bytes(s.step_bytes),
                human_bytes(s.blob_bytes),
                human_bytes(s.history_bytes),
                human_bytes(s.stored_bytes),
                human_bytes(round(s.bytes_per_step)) if s.bytes_per_step else "-",
            )
            for s in shown
        ),
    )
    return 0


def _costs(args: argparse.Namespace) -> int:
    from agentckpt.cli.command import CommandLineError
    from agentckpt.cli.output import print_json, print_table
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.costs import costs

    if args.run_ids or args.older_than is not None:
        raise CommandLineError(
            "--costs takes --agent, --kind and --status, not runs or --older-than"
        )
    with open_store(store_url(args)) as store:
        rows = costs(store, agent_id=args.agent, kind=args.kind, status=args.status)
    if args.json:
        print_json(
            {
                "rows": [row.to_json() for row in rows],
                "total": {
                    "runs": sum(r.runs for r in rows),
                    "input_tokens": sum(r.input_tokens for r in rows),
                    "output_tokens": sum(r.output_tokens for r in rows),
                    "cost_usd": round(sum(r.cost_usd for r in rows), 6),
                },
            }
        )
        return 0
    print_table(
        ("DAY", "AGENT", "MODEL", "RUNS", "INPUT TOKENS", "OUTPUT TOKENS", "COST USD"),
        (
            (
                r.day,
                r.agent_id or "-",
                r.model,
                r.runs,
                r.input_tokens,
                r.output_tokens,
                round(r.cost_usd, 4),
            )
            for r in rows
        ),
    )
    if rows:
        print(
            f"\ntotal: {sum(r.runs for r in rows)} runs, {sum(r.input_tokens for r in rows)} "
            f"input and {sum(r.output_tokens for r in rows)} output tokens, "
            f"${sum(r.cost_usd for r in rows):.4f}"
        )
    return 0
