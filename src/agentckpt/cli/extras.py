"""Commands built on other parts of agentckpt, offered only when those parts exist.

``blobs gc`` runs ``agentckpt.runs.gc_blobs``. A command appears only when its module
can be imported, so the command line never offers a command that cannot run. (An
``archive`` command waits for a public archive call in ``agentckpt.conversation``:
conversations archive old turns by themselves as they grow.)
"""

from __future__ import annotations

import argparse
import importlib.util

from agentckpt.cli.command import Subparsers, duration, run_id


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add the commands whose modules exist."""
    if not _available("agentckpt.runs.blob_gc"):
        return
    blobs = sub.add_parser("blobs", help="blob maintenance (gc)")
    blobs_sub = blobs.add_subparsers(dest="sub_command", required=True, metavar="SUBCOMMAND")
    gc = blobs_sub.add_parser(
        "gc",
        parents=[common, listing],
        help="delete blobs that no kept step references",
        description="Deletes blobs that no kept step of any run references and that are "
        "older than the grace period (blobs in the database, and with --blob-dir those in "
        "a local blob directory). A blob is never deleted while a step references it.",
    )
    gc.add_argument("run_ids", metavar="RUN", type=run_id, nargs="*", help="only these runs' blobs")
    gc.add_argument(
        "--grace",
        type=duration,
        default=3600.0,
        metavar="AGE",
        help="spare blobs younger than AGE (default 1h): a commit may be about to use them",
    )
    gc.add_argument("--blob-dir", metavar="DIR", help="also collect this local blob directory")
    gc.set_defaults(func=blobs_gc)


def blobs_gc(args: argparse.Namespace) -> int:
    """Collect and report."""
    from agentckpt.cli.output import print_json
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.units import human_bytes
    from agentckpt.runs import gc_blobs

    blob_store = None
    if args.blob_dir:
        from agentckpt.blobstores import LocalBlobStore

        blob_store = LocalBlobStore(args.blob_dir)
    with open_store(store_url(args)) as store:
        report = gc_blobs(store, blob_store, grace=args.grace, runs=args.run_ids or None)
    if args.json:
        print_json(
            {
                "runs_scanned": report.runs_scanned,
                "referenced": report.referenced,
                "kept_recent": report.kept_recent,
                "deleted": [
                    {"run_id": d.run_id, "uri": d.uri, "stored_bytes": d.stored_bytes}
                    for d in report.deleted
                ],
                "deleted_bytes": report.deleted_bytes,
            }
        )
    else:
        print(
            f"scanned {report.runs_scanned} runs: {report.referenced} blobs referenced, "
            f"{len(report.deleted)} deleted ({human_bytes(report.deleted_bytes)} freed), "
            f"{report.kept_recent} unreferenced but younger than the grace period kept"
        )
    return 0
