"""``agentckpt import --from langgraph-postgres URL | langgraph-sqlite PATH``.

A thin command over :mod:`agentckpt.integrations.langgraph.importer`, which is imported
only here, so the rest of the command line works without LangGraph installed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from agentckpt.errors import ConfigurationError

if TYPE_CHECKING:
    from agentckpt.integrations.langgraph.importer import ImportProgress, ImportReport
    from agentckpt.integrations.langgraph.saver import AgentckptSaver

__all__ = ["import_from_langgraph"]

_FRAMEWORK = ("langgraph", "langchain_core")


def import_from_langgraph(args: argparse.Namespace) -> int:
    """Copy every thread of LangGraph's saver tables into the store."""
    try:
        from agentckpt.integrations.langgraph.importer import import_threads
        from agentckpt.integrations.langgraph.sources import open_source
    except ModuleNotFoundError as exc:
        package = (exc.name or "").split(".")[0]
        if package not in _FRAMEWORK:
            raise
        raise ConfigurationError(
            f"--from {args.source_kind} needs LangGraph ({package} is not installed): "
            "pip install 'agentckpt[langgraph]'"
        ) from None
    from agentckpt.cli.output import Progress, print_json
    from agentckpt.cli.target import store_url

    url = store_url(args)
    # The source first: a wrong path or database fails before the target is touched.
    source = open_source(args.source_kind, args.file)
    try:
        with (
            _target(url, dry_run=args.dry_run) as saver,
            Progress("import checkpoints", None) as bar,
        ):

            def show(progress: ImportProgress) -> None:
                bar.total = progress.checkpoints
                bar.advance(
                    progress.checkpoints_done - bar.done,
                    note=f"{progress.threads_done}/{progress.threads} threads",
                )

            report = import_threads(
                source, saver, on_conflict=args.on_conflict, dry_run=args.dry_run, on_progress=show
            )
    finally:
        source.close()
    if args.json:
        print_json(report.to_json())
    else:
        print(_summary(report))
    return 0


@contextmanager
def _target(url: str, *, dry_run: bool) -> Iterator[AgentckptSaver | None]:
    """The saver to import into; for a dry run a read-only one, None if there is no store."""
    from agentckpt.cli.target import require_schema, sqlite_path
    from agentckpt.integrations.langgraph.saver import DEFAULT_POLICY, AgentckptSaver
    from agentckpt.store.store import Store

    if not dry_run:
        with AgentckptSaver.from_url(url) as saver:
            yield saver
        return
    path = sqlite_path(url)
    if path is not None and not path.exists():
        yield None  # no store yet: every thread would be new
        return
    with Store.connect(url, migrate=False, policy=DEFAULT_POLICY) as store:
        require_schema(store)
        yield AgentckptSaver(store=store)


def _summary(report: ImportReport) -> str:
    verb = "would copy" if report.dry_run else "copied"
    return (
        f"{verb} {report.checkpoints} checkpoints and {report.writes} writes of "
        f"{report.threads} threads from {report.source}: {len(report.imported)} new, "
        f"{len(report.updated)} updated, {len(report.unchanged)} unchanged, "
        f"{len(report.replaced)} replaced, {len(report.skipped)} skipped"
    )
