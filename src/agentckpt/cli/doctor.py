"""``agentckpt doctor``: are this store's commits durable, and what to change if not."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from agentckpt.cli.command import EXIT_ERROR, Subparsers
from agentckpt.cli.durability import Finding
from agentckpt.ops.views import durability_settings, replication_state


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``doctor``."""
    cmd = sub.add_parser(
        "doctor",
        parents=[common, listing],
        help="check the durability settings of the store and say what to change",
        description="PostgreSQL: synchronous_commit, fsync, full_page_writes, "
        "synchronous standbys and each standby's replication state, data checksums, and "
        "whether an acknowledged commit can be lost on failover. SQLite: journal_mode and "
        "synchronous as agentckpt sets them, and where the file lives. Exit status 1 "
        "when a check fails, as for every setting that can lose acknowledged commits "
        "(with --strict, also when one warns).",
    )
    cmd.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    cmd.set_defaults(func=run)


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path``, from /proc/mounts (Linux); else None."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    resolved = str(path.resolve())
    best, found = -1, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) > best:
            best, found = len(point), fields[2]
    return found


def diagnose(url: str) -> tuple[str, list[Finding]]:
    """Connect to ``url`` and return its dialect and the findings."""
    from agentckpt.cli.durability import assess_postgres, assess_sqlite
    from agentckpt.cli.layout_report import assess_layout
    from agentckpt.cli.target import open_store, sqlite_path

    with open_store(url) as store:
        settings = durability_settings(store)
        standbys = replication_state(store)
        dialect = store.backend.dialect
        # Only the PostgreSQL backend has a layout to report.
        layout_state = getattr(store.backend, "layout_state", None)
        layout = layout_state() if layout_state is not None else None
    if layout is not None:
        return dialect, assess_postgres(settings, standbys) + assess_layout(layout)
    path = sqlite_path(url)
    if path is None:
        return dialect, assess_sqlite(
            settings, path=None, fs_type=None, free_bytes=None, writable=True
        )
    folder = path.resolve().parent
    return dialect, assess_sqlite(
        settings,
        path=str(path.resolve()),
        fs_type=filesystem_type(folder),
        free_bytes=shutil.disk_usage(folder).free,
        writable=os.access(folder, os.W_OK),
    )


_LABEL = {"ok": "ok", "info": "note", "warn": "WARN", "fail": "FAIL"}


def run(args: argparse.Namespace) -> int:
    """Print the findings; exit 1 when one fails."""
    from agentckpt.cli.output import print_json, print_table
    from agentckpt.cli.target import store_url

    dialect, findings = diagnose(store_url(args))
    bad = {"fail", "warn"} if args.strict else {"fail"}
    failed = any(f.status in bad for f in findings)
    if args.json:
        print_json(
            {
                "dialect": dialect,
                "ok": not failed,
                "findings": [
                    {"check": f.check, "value": f.value, "status": f.status, "advice": f.advice}
                    for f in findings
                ],
            }
        )
        return EXIT_ERROR if failed else 0
    print(f"agentckpt doctor: {dialect} store")
    print_table(
        ("STATUS", "CHECK", "VALUE"), ((_LABEL[f.status], f.check, f.value) for f in findings)
    )
    advice = [f for f in findings if f.advice]
    if advice:
        print("\nWhat to change:")
        for number, finding in enumerate(advice, start=1):
            print(f"{number}. {finding.check}: {finding.advice}")
    else:
        print("\nAll durability checks passed.")
    return EXIT_ERROR if failed else 0
