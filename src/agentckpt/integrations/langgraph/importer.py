"""Copy every thread of LangGraph's own savers into agentckpt, through :class:`AgentckptSaver`.

Each checkpoint is read from the source (:mod:`.sources`), decoded with LangGraph's
serializer and stored with ``AgentckptSaver.put``, oldest first, with its parent and
metadata; its pending writes follow with their task, index and task path. So an imported
thread is stored exactly as if agentckpt had written it: one run per namespace, deltas,
blobs, index rows and writes.

Running an import again is safe, and finishes one that was interrupted. Per thread:

- **imported**: agentckpt had no checkpoint of it; all of them are copied.
- **updated**: every checkpoint agentckpt has is also in the source; the missing ones are
  copied (a rerun after an interrupted import, or after the LangGraph saver went on).
- **unchanged**: agentckpt has every checkpoint already; nothing is written.
- a **conflict**: agentckpt has checkpoints of the thread that the source has not (it
  went on on agentckpt, or is another thread with the same id). ``on_conflict`` says what
  happens: ``"error"`` (default) refuses the whole import before anything is written,
  ``"skip"`` leaves the thread as agentckpt has it (**skipped**), ``"replace"`` deletes it
  from agentckpt and copies it again (**replaced**).

The planning (:func:`plan_thread`) is pure; :func:`import_threads` does the I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from agentckpt.errors import ConflictError, CorruptDataError
from agentckpt.integrations.langgraph.calls import thread_config
from agentckpt.integrations.langgraph.records import check_text
from agentckpt.integrations.langgraph.saver import AgentckptSaver
from agentckpt.integrations.langgraph.sources import Source

__all__ = [
    "ImportProgress",
    "ImportReport",
    "OnConflict",
    "Outcome",
    "ThreadPlan",
    "import_threads",
    "plan_thread",
]

OnConflict = Literal["error", "skip", "replace"]
Outcome = Literal["imported", "updated", "unchanged", "conflict", "skipped", "replaced"]
# How many conflicting threads an error names.
_NAMED = 5


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """What importing one thread does: its outcome and the checkpoints to copy.

    ``missing`` maps each namespace to the checkpoint ids to copy, oldest first.
    ``latest_present`` maps a namespace to its greatest checkpoint id agentckpt already
    has: its pending writes are stored again (kept ones stay as they are), since an
    interrupted import may have stopped between a checkpoint and its writes.
    """

    thread_id: str
    outcome: Outcome
    missing: dict[str, list[str]] = field(default_factory=dict)
    latest_present: dict[str, str] = field(default_factory=dict)

    @property
    def checkpoints(self) -> int:
        """How many checkpoints the import copies."""
        return sum(len(ids) for ids in self.missing.values())


def plan_thread(
    thread_id: str,
    source: Mapping[str, Iterable[str]],
    stored: Mapping[str, Set[str]],
    on_conflict: OnConflict = "error",
) -> ThreadPlan:
    """The plan for one thread, from the checkpoint ids of the source and of agentckpt.

    Both map a namespace to its checkpoint ids. A conflict becomes ``"conflict"`` with
    ``on_conflict="error"``, ``"skipped"`` or ``"replaced"`` (everything copied) otherwise.
    """
    wanted = {namespace: sorted(ids) for namespace, ids in source.items()}
    extra = any(
        checkpoint_id not in set(wanted.get(namespace, ()))
        for namespace, ids in stored.items()
        for checkpoint_id in ids
    )
    if extra:
        if on_conflict == "error":
            return ThreadPlan(thread_id, "conflict")
        if on_conflict == "skip":
            return ThreadPlan(thread_id, "skipped")
        return ThreadPlan(thread_id, "replaced", missing=wanted)
    if not any(stored.values()):
        return ThreadPlan(thread_id, "imported", missing=wanted)
    missing: dict[str, list[str]] = {}
    latest: dict[str, str] = {}
    for namespace, ids in wanted.items():
        have = stored.get(namespace, set())
        todo = [checkpoint_id for checkpoint_id in ids if checkpoint_id not in have]
        if todo:
            missing[namespace] = todo
        if have:
            latest[namespace] = max(have)
    return ThreadPlan(
        thread_id, "updated" if missing else "unchanged", missing=missing, latest_present=latest
    )


@dataclass(slots=True)
class ImportReport:
    """What an import did (or, with ``dry_run``, would do), thread by thread."""

    source: str
    dry_run: bool = False
    threads: int = 0
    checkpoints: int = 0
    writes: int = 0
    imported: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def add(self, plan: ThreadPlan) -> None:
        """Count a thread under its outcome."""
        self.threads += 1
        {
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "replaced": self.replaced,
            "skipped": self.skipped,
        }[plan.outcome].append(plan.thread_id)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON values."""
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "replaced": self.replaced,
            "skipped": self.skipped,
        }


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Where an import is, after each checkpoint: threads and checkpoints done and planned."""

    threads_done: int
    threads: int
    checkpoints_done: int
    checkpoints: int
    thread_id: str


def import_threads(
    source: Source,
    saver: AgentckptSaver | None,
    *,
    on_conflict: OnConflict = "error",
    dry_run: bool = False,
    on_progress: Callable[[ImportProgress], None] | None = None,
) -> ImportReport:
    """Copy every thread of ``source`` into ``saver``'s store; see the module docstring.

    With ``dry_run`` nothing is written: the report counts what would be copied
    (``saver`` may then be None, for a store that does not exist yet: every thread is
    new). Conflicts with ``on_conflict="error"`` raise :class:`ConflictError` before
    anything is written.
    """
    report = ImportReport(source=source.where, dry_run=dry_run)
    plans = [
        _plan(source, saver, thread_id, on_conflict)
        for thread_id in (check_text(t, "thread_id") for t in source.thread_ids())
    ]
    conflicts = [plan.thread_id for plan in plans if plan.outcome == "conflict"]
    if conflicts:
        named = ", ".join(repr(t) for t in conflicts[:_NAMED])
        more = f" and {len(conflicts) - _NAMED} more" if len(conflicts) > _NAMED else ""
        raise ConflictError(
            f"{len(conflicts)} threads already in agentckpt have checkpoints that "
            f"{source.where} has not ({named}{more}); nothing was imported (use "
            "--on-conflict skip to leave them, or --on-conflict replace to import them again)"
        )
    planned = sum(plan.checkpoints for plan in plans)
    if dry_run or saver is None:
        for plan in plans:
            report.add(plan)
            report.checkpoints += plan.checkpoints
            if plan.checkpoints:
                counts = source.write_counts(plan.thread_id)
                report.writes += sum(
                    counts.get((namespace, checkpoint_id), 0)
                    for namespace, ids in plan.missing.items()
                    for checkpoint_id in ids
                )
        return report
    done = 0
    for number, first in enumerate(plans, start=1):
        # Planned again: the source or agentckpt may have moved on since the first pass.
        plan = _plan(source, saver, first.thread_id, on_conflict)
        if plan.outcome == "conflict":
            raise ConflictError(
                f"thread {plan.thread_id!r} went on in agentckpt during the import; threads "
                "before it were imported, it and the rest were not"
            )
        if plan.outcome == "replaced":
            saver.delete_thread(plan.thread_id)
        for namespace, checkpoint_id in plan.latest_present.items():
            _copy_writes(source, saver, plan.thread_id, namespace, checkpoint_id)
        for namespace, ids in plan.missing.items():
            for checkpoint_id in ids:
                _copy_checkpoint(source, saver, plan.thread_id, namespace, checkpoint_id)
                report.writes += _copy_writes(
                    source, saver, plan.thread_id, namespace, checkpoint_id
                )
                report.checkpoints += 1
                done += 1
                if on_progress is not None:
                    on_progress(
                        ImportProgress(
                            number - 1, len(plans), done, max(planned, done), plan.thread_id
                        )
                    )
        report.add(plan)
        if on_progress is not None:
            on_progress(
                ImportProgress(number, len(plans), done, max(planned, done), plan.thread_id)
            )
    return report


def _plan(
    source: Source, saver: AgentckptSaver | None, thread_id: str, on_conflict: OnConflict
) -> ThreadPlan:
    stored = {} if saver is None else saver._sync().thread_checkpoints(thread_id)
    return plan_thread(thread_id, source.checkpoint_ids(thread_id), stored, on_conflict)


def _copy_checkpoint(
    source: Source, saver: AgentckptSaver, thread_id: str, namespace: str, checkpoint_id: str
) -> None:
    found = source.checkpoint(thread_id, namespace, checkpoint_id)
    if found.checkpoint.get("id") != checkpoint_id:
        raise CorruptDataError(
            f"{source.where}: the row of checkpoint {checkpoint_id!r} of thread {thread_id!r} "
            f"holds checkpoint {found.checkpoint.get('id')!r}"
        )
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace}}
    if found.parent_id is not None:
        config = thread_config(thread_id, namespace, found.parent_id)
    checkpoint = cast(Checkpoint, found.checkpoint)
    saver.put(
        config,
        checkpoint,
        cast(CheckpointMetadata, found.metadata),
        dict(checkpoint.get("channel_versions", {})),
    )


def _copy_writes(
    source: Source, saver: AgentckptSaver, thread_id: str, namespace: str, checkpoint_id: str
) -> int:
    writes = source.writes(thread_id, namespace, checkpoint_id)
    if not writes:
        return 0
    codec = saver._codec()
    rows = [
        codec.encode_write(
            check_text(w.task_id, "task_id"),
            check_text(w.task_path, "task_path"),
            w.idx,
            check_text(w.channel, "channel"),
            w.value,
        )
        for w in writes
    ]
    # Never replace: a write agentckpt already keeps under (task, index) stays as it is.
    saver._sync().put_writes(thread_id, namespace, checkpoint_id, rows, replace=False)
    return len(rows)
