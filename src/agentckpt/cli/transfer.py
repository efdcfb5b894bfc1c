"""``agentckpt export | import``: move runs between stores as JSON Lines.

The format is described in :mod:`agentckpt.ops.exchange`; it round-trips exactly
between SQLite and PostgreSQL.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from agentckpt.cli.command import CommandLineError, Subparsers, run_id
from agentckpt.cli.runs import add_filters, filters


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``export`` and ``import``."""
    export = sub.add_parser(
        "export",
        parents=[common],
        help="write runs as JSON Lines (every stored row, exactly)",
        description="Write the named runs, or every run the filters select (default: all), "
        "with their steps, blobs, effects, history and events. `agentckpt import` recreates "
        "them exactly in any store, SQLite or PostgreSQL.",
    )
    export.add_argument("run_ids", metavar="RUN", type=run_id, nargs="*", help="runs to export")
    add_filters(export)
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE instead of standard output"
    )
    export.add_argument(
        "--format",
        choices=("rows", "transcript"),
        default="rows",
        help="rows: every stored row, for `agentckpt import` (default); transcript: one "
        "chat-message line per run with messages (role, content, tool calls and results, "
        "agent config), for evaluation and fine-tuning",
    )
    export.add_argument(
        "--blobs",
        choices=("inline", "ref"),
        default="inline",
        help="with --format transcript: a tool result stored as a blob is written as its "
        "value (inline, the default) or as its blob reference (ref)",
    )
    export.add_argument(
        "--json",
        action="store_true",
        help="print the summary (runs, lines, bytes) as JSON: on stdout with -o FILE, "
        "else on stderr",
    )
    export.add_argument(
        "--decrypt",
        action="store_true",
        help="an encrypted store: write every value decrypted (default: values stay "
        "encrypted and the wrapped data keys go along); needs encryption= in the URL",
    )
    export.set_defaults(func=export_command)

    imp = sub.add_parser(
        "import",
        parents=[common, listing],
        help="recreate runs from an export file, or copy LangGraph's saver tables",
        description="Every line of a run is checked (every field, every state against its "
        "checksum, every blob against its sha256) before anything of the run is written, "
        "and the run appears in the store whole or not at all; a bad line stops the import "
        "with one line naming the file line and the field (the runs before it stay "
        "imported). With --from langgraph-postgres URL or --from langgraph-sqlite "
        "PATH, every thread of LangGraph's own saver is copied in instead, as AgentckptSaver "
        "would have stored it; running it again copies only what is missing.",
    )
    imp.add_argument(
        "file",
        metavar="FILE",
        help="an export file, or - for standard input; with --from, LangGraph's database "
        "(its PostgresSaver connection string, or its SqliteSaver file)",
    )
    imp.add_argument(
        "--from",
        dest="source_kind",
        choices=("langgraph-postgres", "langgraph-sqlite"),
        help="copy the threads of LangGraph's PostgresSaver or SqliteSaver tables",
    )
    imp.add_argument(
        "--dry-run",
        action="store_true",
        help="with --from: count what would be copied, write nothing",
    )
    imp.add_argument(
        "--on-conflict",
        choices=("error", "skip", "replace"),
        default="error",
        help="when a run (with --from: a thread that went on in agentckpt) already exists: "
        "stop with an error before importing anything (default), skip it, or delete and "
        "import it again",
    )
    imp.set_defaults(func=import_command)


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if path is None or path == "-":
        yield sys.stdout
        return
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    # Write beside the target and rename at the end: a failed export never leaves a
    # file that looks complete (the end line would be missing anyway).
    with partial.open("w", encoding="utf-8") as stream:
        yield stream
    partial.replace(target)


def export_command(args: argparse.Namespace) -> int:
    """Export runs to a file or standard output."""
    from agentckpt.cli.output import Progress, print_json
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.exchange import export_runs
    from agentckpt.ops.transcript_export import export_transcripts
    from agentckpt.ops.units import human_bytes
    from agentckpt.ops.views import run_summaries

    chosen = filters(args)
    if args.run_ids and any(v is not None for v in chosen.values()):
        raise CommandLineError("name runs or use filters, not both")
    with open_store(store_url(args)) as store:
        if args.run_ids:
            run_ids = [store.get_run(run_id).run_id for run_id in args.run_ids]
        else:
            run_ids = [s.run_id for s in run_summaries(store, limit=None, **chosen)]
        with _output(args.output) as out, Progress("export", len(run_ids)) as bar:
            if args.format == "transcript":
                chats = export_transcripts(
                    store,
                    run_ids,
                    out,
                    blobs=args.blobs,
                    on_run=lambda rid, _: bar.advance(note=str(rid)[:8]),
                )
                runs, lines, skipped = chats.written, chats.written, chats.skipped
            else:
                summary = export_runs(
                    store,
                    run_ids,
                    out,
                    on_run=lambda rid, n: bar.advance(note=str(rid)[:8]),
                    decrypt=args.decrypt,
                )
                runs, lines, skipped = summary.runs, summary.lines, 0
    to_file = bool(args.output) and args.output != "-"
    size = Path(args.output).stat().st_size if to_file else None
    if args.json:
        print_json(
            {
                "format": args.format,
                "runs": runs,
                "lines": lines,
                "skipped_runs": skipped,
                "bytes": size,
                "output": args.output if to_file else None,
            },
            out=sys.stdout if to_file else sys.stderr,
        )
    elif to_file:
        note = f"; {skipped} without messages skipped" if args.format == "transcript" else ""
        print(
            f"exported {runs} runs ({lines} lines, {human_bytes(size)}) to {args.output}{note}",
            file=sys.stderr,
        )
    return 0


def import_command(args: argparse.Namespace) -> int:
    """Import an export file, or LangGraph's saver tables (``--from``)."""
    if args.source_kind is not None:
        from agentckpt.cli.from_langgraph import import_from_langgraph

        return import_from_langgraph(args)
    if args.dry_run:
        raise CommandLineError("--dry-run works with --from langgraph-postgres|langgraph-sqlite")
    from agentckpt.cli.output import Progress, print_json
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.ops.exchange import import_runs

    # Bytes, decoded line by line by the import: a line that is not UTF-8 is refused
    # with its number, like any other bad line.
    if args.file == "-":
        stream: BinaryIO = sys.stdin.buffer
        source = "standard input"
        total = None
    else:
        stream = Path(args.file).open("rb")  # noqa: SIM115 - closed below
        source = args.file
        total = _count_runs(args.file) if sys.stderr.isatty() else None
    try:
        with open_store(store_url(args), writable=True) as store, Progress("import", total) as bar:
            summary = import_runs(
                store,
                stream,
                on_conflict=args.on_conflict,
                on_run=lambda rid, outcome: bar.advance(note=f"{str(rid)[:8]} {outcome}"),
                source=source,
            )
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if args.json:
        print_json(
            {
                "imported": summary.imported,
                "replaced": summary.replaced,
                "skipped": summary.skipped,
            }
        )
    else:
        print(
            f"imported {len(summary.imported)} runs, replaced {len(summary.replaced)}, "
            f"skipped {len(summary.skipped)} that already existed"
        )
    return 0


def _count_runs(path: str) -> int:
    """Runs in an export file, for the progress bar.

    Keys are sorted, so a line's own ``type`` is its last key: ``"type":"run"}`` ends a
    run line and no other (a column named type would be followed by more of the line).
    """
    with open(path, "rb") as stream:
        return sum(1 for line in stream if line.rstrip().endswith(b'"type":"run"}'))
