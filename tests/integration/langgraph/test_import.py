"""Copying threads from LangGraph's own savers (PostgresSaver, SqliteSaver) into agentckpt.

A real graph (tools, a subgraph, an interrupt) runs a few turns on LangGraph's saver; the
threads are imported; then the same thread ids continue on ``AgentckptSaver`` and on
LangGraph's saver, and must end in the same state. Targets: a fresh SQLite file and a
fresh PostgreSQL schema (``url``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)
pytest.importorskip("langgraph.checkpoint.sqlite", reason="needs langgraph-checkpoint-sqlite")
pytest.importorskip("langgraph.checkpoint.postgres", reason="needs langgraph-checkpoint-postgres")

from agentckpt import ConfigurationError, ConflictError
from agentckpt.integrations.langgraph import AgentckptSaver
from agentckpt.integrations.langgraph.importer import (
    ImportProgress,
    ImportReport,
    import_threads,
    plan_thread,
)
from agentckpt.integrations.langgraph.sources import open_source
from tests.integration.langgraph import migration_graph as mg

THREADS = ("alice", "bob")


@contextmanager
def langgraph_saver(kind: str, where: str) -> Iterator[Any]:
    with (mg.sqlite_saver if kind == "langgraph-sqlite" else mg.postgres_saver)(where) as saver:
        yield saver


@pytest.fixture(params=["langgraph-sqlite", "langgraph-postgres"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(kind, location) of an empty LangGraph saver database."""
    if request.param == "langgraph-sqlite":
        yield request.param, str(tmp_path / "langgraph.sqlite")
        return
    with mg.postgres_schema(request.getfixturevalue("pg_server_dsn")) as conn_string:
        yield request.param, conn_string


@pytest.fixture
def sqlite_source(tmp_path: Path) -> tuple[str, str]:
    return "langgraph-sqlite", str(tmp_path / "langgraph.sqlite")


def run_import(source: tuple[str, str], url: str, **options: Any) -> ImportReport:
    opened = open_source(*source)
    try:
        with AgentckptSaver.from_url(url) as saver:
            return import_threads(opened, saver, **options)
    finally:
        opened.close()


def started(source: tuple[str, str]) -> dict[str, Any]:
    """Run the first turns on LangGraph's saver; every thread's history and checkpoints."""
    with langgraph_saver(*source) as theirs:
        graph = mg.build(theirs)
        mg.start_threads(graph)
        return {t: (mg.history(graph, t), mg.checkpoints(theirs, t)) for t in THREADS}


def test_imported_threads_continue_as_on_langgraphs_own_saver(
    source: tuple[str, str], url: str
) -> None:
    before = started(source)
    total = sum(len(rows) for _, rows in before.values())

    report = run_import(source, url)

    assert report.imported == list(THREADS)
    assert report.checkpoints == total
    assert report.writes > total  # every task's writes, the interrupts and resumes
    with AgentckptSaver.from_url(url) as saver:
        ours = mg.build(saver)
        for thread in THREADS:
            history, rows = before[thread]
            # Every checkpoint, in every namespace, with its parent, metadata and writes.
            assert mg.checkpoints(saver, thread) == rows
            assert {row[0] for row in rows} > {""}  # the subgraph's namespaces came too
            assert mg.history(ours, thread) == history
        # Stored as agentckpt stores a thread: one run per namespace, deltas.
        kinds = [step.kind for step in saver.store.steps(saver.run_id("alice"))]
        assert len(kinds) == sum(1 for row in before["alice"][1] if row[0] == "")
        assert "delta" in kinds  # where a delta is smaller than the state, as for any run
        # alice waits on the interrupt: the import kept it pending, so resuming works.
        assert ours.get_state(mg.config("alice")).next == ("review",)
        mg.continue_threads(ours)
        ours_after = {t: (mg.shape(ours, t), ours.get_state(mg.config(t)).values) for t in THREADS}
    with langgraph_saver(*source) as theirs:
        graph = mg.build(theirs)
        mg.continue_threads(graph)
        theirs_after = {
            t: (mg.shape(graph, t), graph.get_state(mg.config(t)).values) for t in THREADS
        }
    assert ours_after == theirs_after
    messages = ours_after["alice"][1]["messages"]
    assert [m.content for m in messages[-2:]] == [
        "The answer is AND IN ROME (12 messages so far).",
        "Reviewed: ok",
    ]


def test_importing_again_changes_nothing(sqlite_source: tuple[str, str], url: str) -> None:
    started(sqlite_source)
    first = run_import(sqlite_source, url)
    with AgentckptSaver.from_url(url) as saver:
        steps = {t: len(saver.store.steps(saver.run_id(t))) for t in THREADS}
        rows = {t: mg.checkpoints(saver, t) for t in THREADS}

    again = run_import(sqlite_source, url)

    assert again.unchanged == list(THREADS)
    assert (again.checkpoints, again.writes, again.imported) == (0, 0, [])
    with AgentckptSaver.from_url(url) as saver:
        assert {t: len(saver.store.steps(saver.run_id(t))) for t in THREADS} == steps
        assert {t: mg.checkpoints(saver, t) for t in THREADS} == rows
    assert first.checkpoints == sum(len(r) for r in rows.values())


class Stop(Exception):
    """Raised from the progress callback: the import stops there, as if killed."""


def test_an_interrupted_import_finishes_when_run_again(
    sqlite_source: tuple[str, str], url: str
) -> None:
    before = started(sqlite_source)
    seen: list[ImportProgress] = []

    def stop_after_seven(progress: ImportProgress) -> None:
        seen.append(progress)
        if progress.checkpoints_done == 7:
            raise Stop

    with pytest.raises(Stop):
        run_import(sqlite_source, url, on_progress=stop_after_seven)
    assert seen[-1].threads_done == 0
    assert seen[-1].checkpoints == sum(len(rows) for _, rows in before.values())

    report = run_import(sqlite_source, url)

    assert report.updated == ["alice"]  # part of it was there
    assert report.imported == ["bob"]
    assert report.checkpoints == seen[-1].checkpoints - 7
    with AgentckptSaver.from_url(url) as saver:
        for thread in THREADS:
            assert mg.checkpoints(saver, thread) == before[thread][1]


def test_checkpoints_langgraph_wrote_since_are_added(
    sqlite_source: tuple[str, str], url: str
) -> None:
    started(sqlite_source)
    run_import(sqlite_source, url)
    with langgraph_saver(*sqlite_source) as theirs:
        mg.resume(mg.build(theirs), "alice", "late answer")
        expected = mg.checkpoints(theirs, "alice")

    report = run_import(sqlite_source, url)

    assert (report.updated, report.unchanged) == (["alice"], ["bob"])
    assert report.checkpoints > 0
    with AgentckptSaver.from_url(url) as saver:
        assert mg.checkpoints(saver, "alice") == expected


def test_a_thread_that_went_on_in_agentckpt_is_a_conflict(
    sqlite_source: tuple[str, str], url: str
) -> None:
    started(sqlite_source)
    run_import(sqlite_source, url)
    with AgentckptSaver.from_url(url) as saver:
        mg.resume(mg.build(saver), "alice", "answered in agentckpt")
        ours = mg.checkpoints(saver, "alice")
    with langgraph_saver(*sqlite_source) as theirs:
        graph = mg.build(theirs)
        mg.resume(graph, "alice", "answered in LangGraph")
        mg.ask(graph, "bob", "one more")
        theirs_rows = {t: mg.checkpoints(theirs, t) for t in THREADS}

    # Default: refused before anything is written (bob's new checkpoints are not copied).
    with pytest.raises(ConflictError, match=r"'alice'.*nothing was imported"):
        run_import(sqlite_source, url)
    with AgentckptSaver.from_url(url) as saver:
        assert mg.checkpoints(saver, "alice") == ours
        assert mg.checkpoints(saver, "bob") != theirs_rows["bob"]

    skipped = run_import(sqlite_source, url, on_conflict="skip")
    assert (skipped.skipped, skipped.updated) == (["alice"], ["bob"])
    with AgentckptSaver.from_url(url) as saver:
        assert mg.checkpoints(saver, "alice") == ours
        assert mg.checkpoints(saver, "bob") == theirs_rows["bob"]

    replaced = run_import(sqlite_source, url, on_conflict="replace")
    assert (replaced.replaced, replaced.unchanged) == (["alice"], ["bob"])
    with AgentckptSaver.from_url(url) as saver:
        assert mg.checkpoints(saver, "alice") == theirs_rows["alice"]


def test_a_dry_run_counts_and_writes_nothing(sqlite_source: tuple[str, str], url: str) -> None:
    started(sqlite_source)
    opened = open_source(*sqlite_source)
    try:
        with AgentckptSaver.from_url(url) as saver:
            dry = import_threads(opened, saver, dry_run=True)
            assert saver.store.list_runs() == []
            real = import_threads(opened, saver)
        nothing = import_threads(opened, None, dry_run=True)  # no store at all yet
    finally:
        opened.close()
    assert dry.dry_run
    assert not real.dry_run
    assert (dry.checkpoints, dry.writes, dry.imported) == (
        real.checkpoints,
        real.writes,
        real.imported,
    )
    assert nothing.imported == list(THREADS)


def test_a_database_of_another_kind_is_refused(tmp_path: Path, pg_url: str) -> None:
    with AgentckptSaver.from_url(f"sqlite:///{tmp_path}/agentckpt.db"):
        pass  # an agentckpt store: no LangGraph tables
    with pytest.raises(ConfigurationError, match="not a LangGraph SqliteSaver database"):
        open_source("langgraph-sqlite", str(tmp_path / "agentckpt.db"))
    (tmp_path / "text.db").write_text("hello " * 200)
    with pytest.raises(ConfigurationError, match="not a SQLite database"):
        open_source("langgraph-sqlite", str(tmp_path / "text.db"))
    with pytest.raises(ConfigurationError, match="no SQLite database at"):
        open_source("langgraph-sqlite", str(tmp_path / "missing.db"))
    base, _, schema = pg_url.partition("?schema=")
    with pytest.raises(ConfigurationError, match="not a LangGraph PostgresSaver database"):
        open_source("langgraph-postgres", f"{base}?options=-csearch_path%3D{schema}")
    with pytest.raises(ConfigurationError, match="cannot connect"):
        open_source("langgraph-postgres", "postgresql://root@127.0.0.1:1/nothing")


def test_the_source_is_never_written(sqlite_source: tuple[str, str], url: str) -> None:
    started(sqlite_source)
    path = Path(sqlite_source[1])
    stamp = path.read_bytes()
    run_import(sqlite_source, url)
    assert path.read_bytes() == stamp


# -- the plan, without a database -------------------------------------------------------------


def test_plans() -> None:
    source = {"": ["c", "a", "b"], "sub:1": ["x"]}
    new = plan_thread("t", source, {})
    assert (new.outcome, new.missing, new.checkpoints) == (
        "imported",
        {"": ["a", "b", "c"], "sub:1": ["x"]},
        4,
    )
    part = plan_thread("t", source, {"": {"a", "b"}})
    assert (part.outcome, part.missing, part.latest_present) == (
        "updated",
        {"": ["c"], "sub:1": ["x"]},
        {"": "b"},
    )
    done = plan_thread("t", source, {"": {"a", "b", "c"}, "sub:1": {"x"}})
    assert (done.outcome, done.checkpoints) == ("unchanged", 0)
    went_on = {"": {"a", "b", "c", "d"}}
    assert plan_thread("t", source, went_on).outcome == "conflict"
    assert plan_thread("t", source, {"other": {"z"}}).outcome == "conflict"
    assert plan_thread("t", source, went_on, "skip").outcome == "skipped"
    replaced = plan_thread("t", source, went_on, "replace")
    assert (replaced.outcome, replaced.checkpoints) == ("replaced", 4)
