"""The inspector's pages: runs, a run, the state at a step, a diff.

Each function reads what it needs through the store and :mod:`agentckpt.ops`, and renders
a template (:mod:`agentckpt.inspector.render`); a run of any kind reads as what it is
(:mod:`agentckpt.ops.kinds`, :mod:`agentckpt.ops.transcripts`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson

from agentckpt._core.delta import apply, diff
from agentckpt.errors import InvalidValueError
from agentckpt.inspector.blobs import Blobs
from agentckpt.inspector.charts import StepSize, group_size, growth_chart, stored_bytes_chart
from agentckpt.inspector.render import path, render
from agentckpt.ops import kinds
from agentckpt.ops.recovery import FLAGS, assess
from agentckpt.ops.serde import Decoder
from agentckpt.ops.transcripts import Entry, Transcript, stored_messages, transcript
from agentckpt.ops.views import (
    ORPHAN_AFTER_SECONDS,
    DailyUsage,
    ListedRun,
    RunFilter,
    StoredWrite,
    ThreadCheckpoint,
    kept_window,
    page_runs,
    run_summaries,
    stored_state,
    stored_writes,
    table_sizes,
    thread_checkpoints,
    usage_by_day,
)
from agentckpt.records import RunInfo, StepInfo
from agentckpt.redaction import RECORD_PREFIX, records_in
from agentckpt.store.store import Store, as_run_id

RUNS_PER_PAGE = 50
TIMELINE_STEPS = 50
TIMELINE_MESSAGES = 20
# A long run's step lists this many of its changes, each value cut at SHORT_VALUE chars.
STEP_CHANGES = 5
SHORT_VALUE = 120
LIVE_SECONDS = 5
# Usage: (agent, day) groups read, days and agents shown.
USAGE_GROUPS = 5000
USAGE_DAYS = 14
USAGE_AGENTS = 20
# Diff operations shown with their before and after values.
DIFF_OPS = 2000

KINDS = (
    ("", "any kind"),
    (kinds.CONVERSATION, "conversations"),
    (kinds.RUN, "runs"),
    (kinds.LANGGRAPH, "LangGraph threads"),
    (kinds.SESSION, "Agents SDK sessions"),
)
STATUSES = (
    ("", "any status"),
    ("active", "active"),
    ("completed", "completed"),
    ("failed", "failed"),
)
AGES: dict[str, tuple[str, float | None, float | None]] = {
    "": ("any age", None, None),
    "1h": ("updated in the last hour", 3600, None),
    "1d": ("updated in the last day", 86400, None),
    "7d": ("updated in the last 7 days", 7 * 86400, None),
    "idle-1h": ("idle for an hour or more", None, 3600),
    "idle-1d": ("idle for a day or more", None, 86400),
    "idle-7d": ("idle for 7 days or more", None, 7 * 86400),
}
FLAG_CHOICES = (
    ("", "any"),
    ("attention", "needs attention (any flag)"),
    ("open-turn", FLAGS["open-turn"]),
    ("lease-expired", FLAGS["lease-expired"]),
    ("orphan", FLAGS["orphan"]),
)
_TITLES = {
    kinds.CONVERSATION: "Conversation",
    kinds.LANGGRAPH: "LangGraph thread",
    kinds.SESSION: "Agents SDK session",
}


@dataclass(frozen=True, slots=True)
class View:
    """What every page needs: the store, how to name it, and how to reach it from the
    command line (``command_url``; None: the SQLite file's URL, or ``$AGENTCKPT_URL``)."""

    store: Store
    label: str
    orphan_after: float = ORPHAN_AFTER_SECONDS
    command_url: str | None = None

    def url_for_commands(self) -> tuple[str, str | None]:
        """The ``--url`` argument of a command against this store, and a note if it is
        a placeholder (a PostgreSQL URL may hold a password: it is never printed)."""
        if self.command_url:
            return self.command_url, None
        location = getattr(self.store.backend, "path", None)
        if self.store.backend.dialect == "sqlite" and isinstance(location, str):
            return f"sqlite:///{location}", None
        return '"$AGENTCKPT_URL"', (
            "Set AGENTCKPT_URL to this store's URL first: the inspector never prints a "
            "PostgreSQL URL, which may hold a password."
        )


def _int(query: Mapping[str, str], name: str, what: str = "a step number") -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidValueError("", f"query parameter {name}={text!r} is not {what}") from None


def _choice(query: Mapping[str, str], name: str, allowed: Any) -> str:
    value = query.get(name) or ""
    if value not in dict(allowed):
        names = ", ".join(k for k in dict(allowed) if k)
        raise InvalidValueError("", f"query parameter {name}={value!r} is not one of {names}")
    return value


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- the list of runs ------------------------------------------------------------------


def _row(listed: ListedRun) -> dict[str, Any]:
    s = listed.summary
    meta = listed.metadata
    tokens_in, tokens_out = _number(meta.get("input_tokens")), _number(meta.get("output_tokens"))
    tokens = (
        None if tokens_in is None and tokens_out is None else (tokens_in or 0) + (tokens_out or 0)
    )
    namespace = meta.get("namespace") if s.kind == kinds.LANGGRAPH else None
    title = kinds.title_of(s.kind, meta)
    if title and namespace:
        title += f" · {namespace}"
    return {
        "run_id": s.run_id,
        "title": title,
        "kind": s.kind,
        "agent": s.agent_id,
        "status": s.status,
        "flags": [(name, FLAGS[name]) for name in listed.flags],
        "head_step": s.head_step,
        "tokens": tokens,
        "cost": _number(meta.get("cost_estimate_usd")),
        "stored": s.stored_bytes,
        "per_step": round(s.bytes_per_step) if s.bytes_per_step else None,
        "updated_at": s.updated_at,
    }


def index(view: View, query: Mapping[str, str]) -> str:
    """Runs, most recently updated first: a filter form, a page, usage by agent and day."""
    form = {
        "q": (query.get("q") or "").strip(),
        "kind": _choice(query, "kind", KINDS),
        "status": query.get("status") or "",
        "agent": (query.get("agent") or "").strip(),
        "age": _choice(query, "age", {k: v[0] for k, v in AGES.items()}),
        "flag": _choice(query, "flag", FLAG_CHOICES),
    }
    size = _int(query, "n", "a page size") or RUNS_PER_PAGE
    _, within, idle = AGES[form["age"]]
    where = RunFilter(
        kind=form["kind"] or None,
        status=form["status"] or None,
        agent_id=form["agent"] or None,
        search=form["q"] or None,
        updated_within=within,
        idle_seconds=idle,
        flag=form["flag"] or None,
        orphan_after=view.orphan_after,
    )
    after = query.get("after") or None
    page = page_runs(view.store, where, after=after, limit=size)
    usage = usage_by_day(view.store, where, limit=USAGE_GROUPS)
    tables = {t.table: t for t in table_sizes(view.store)}
    total_runs = tables["runs"].rows if "runs" in tables else page.matching
    kept = {k: v for k, v in form.items() if v} | ({"n": size} if size != RUNS_PER_PAGE else {})
    tabs = [
        (
            text if value else "all",
            path(query={**kept, "kind": value or None}),
            value == form["kind"],
        )
        for value, text in KINDS
    ]
    statuses = list(STATUSES)
    if form["status"] and form["status"] not in dict(statuses):
        statuses.append((form["status"], form["status"]))
    position = _int(query, "at", "a position") or 0
    first_shown = position + 1 if page.runs else 0
    filtered = any(v for v in form.values())
    by_day = _totals(usage, lambda u: u.day)
    by_agent = _totals(usage, lambda u: u.agent_id)
    return render(
        "index.html",
        title={
            kinds.CONVERSATION: "Conversations",
            kinds.RUN: "Runs",
            kinds.LANGGRAPH: "LangGraph threads",
            kinds.SESSION: "Agents SDK sessions",
        }.get(form["kind"], "Runs and conversations"),
        subtitle=None,
        store=view.label,
        crumbs=[],
        refresh=None,
        form=form,
        tabs=tabs,
        kinds=KINDS,
        statuses=statuses,
        ages=[(k, v[0]) for k, v in AGES.items()],
        flags=FLAG_CHOICES,
        agents=sorted({u.agent_id for u in usage if u.agent_id}),
        page=page,
        page_size=size,
        rows=[_row(r) for r in page.runs],
        filtered=filtered,
        total_runs=total_runs,
        first_shown=first_shown,
        last_shown=position + len(page.runs),
        stored=sum(t.payload_bytes for t in tables.values()),
        rows_stored=sum(t.rows for t in tables.values()),
        next_href=(
            path(query={**kept, "after": page.next.to_text(), "at": position + len(page.runs)})
            if page.next
            else None
        ),
        first_href=path(query=kept) if after else None,
        usage_total=_total(usage),
        by_day=sorted(by_day.items(), reverse=True)[:USAGE_DAYS],
        by_agent=sorted(by_agent.items(), key=lambda kv: (-kv[1]["cost_usd"], kv[0]))[
            :USAGE_AGENTS
        ],
        by_agent_day=[(f"{u.agent_id or '-'} · {u.day}", _total([u])) for u in usage[:200]],
    )


def _total(usage: list[DailyUsage]) -> dict[str, Any]:
    return {
        "runs": sum(u.runs for u in usage),
        "input_tokens": sum(u.input_tokens for u in usage),
        "output_tokens": sum(u.output_tokens for u in usage),
        "cost_usd": sum(u.cost_usd for u in usage),
    }


def _totals(usage: list[DailyUsage], key: Callable[[DailyUsage], str]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[DailyUsage]] = {}
    for u in usage:
        groups.setdefault(key(u), []).append(u)
    return {name: _total(items) for name, items in groups.items()}


# -- a run -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Thread:
    """What a LangGraph run's page shows of its thread."""

    thread_id: str
    namespace: str
    checkpoint_id: str | None
    by_step: dict[int, ThreadCheckpoint]
    writes: dict[str, list[dict[str, Any]]]
    others: list[tuple[UUID, str]] = field(default_factory=list)


def _decoder(blobs: Blobs) -> Decoder:
    return Decoder(blobs.data)


def _thread(view: View, run: RunInfo, decoder: Decoder, *, siblings: bool) -> _Thread:
    checkpoints = thread_checkpoints(view.store, run.run_id)
    by_step = {c.step: c for c in checkpoints}
    writes: dict[str, list[dict[str, Any]]] = {}
    for w in stored_writes(view.store, run.run_id):
        writes.setdefault(w.checkpoint_id, []).append(_write(w, decoder))
    head = by_step.get(run.head_step) if run.head_step is not None else None
    thread_id = str(run.metadata.get("thread_id", ""))
    thread = _Thread(
        thread_id=thread_id,
        namespace=str(run.metadata.get("namespace", "")),
        checkpoint_id=head.checkpoint_id if head else None,
        by_step=by_step,
        writes=writes,
    )
    if siblings and thread_id:
        same = page_runs(view.store, RunFilter(kind=kinds.LANGGRAPH, search=thread_id), limit=50)
        thread.others = [
            (r.run_id, str(r.metadata.get("namespace", "")))
            for r in same.runs
            if r.run_id != run.run_id and r.metadata.get("thread_id") == thread_id
        ]
    return thread


def _write(w: StoredWrite, decoder: Decoder) -> dict[str, Any]:
    return {
        "channel": w.channel,
        "task_id": w.task_id,
        "task_path": w.task_path,
        "value": decoder.loads(w.type, w.data),
    }


def _usage(run: RunInfo, head: Transcript | None) -> dict[str, Any]:
    meta = run.metadata
    usage: dict[str, Any] = {
        "input_tokens": _number(meta.get("input_tokens")),
        "output_tokens": _number(meta.get("output_tokens")),
        "cost": _number(meta.get("cost_estimate_usd")),
        "source": None,
    }
    if usage["input_tokens"] is None and usage["output_tokens"] is None and head is not None:
        # LangChain messages carry their own usage (usage_metadata of AI messages).
        found = [e.extra.get("usage_metadata") for e in head.entries]
        counted = [u for u in found if isinstance(u, dict)]
        if counted:
            usage["input_tokens"] = sum(_number(u.get("input_tokens")) or 0 for u in counted)
            usage["output_tokens"] = sum(_number(u.get("output_tokens")) or 0 for u in counted)
            usage["source"] = "the messages' usage_metadata"
    return usage


def _archived(state: Any) -> int:
    archive = state.get("archive") if isinstance(state, dict) else None
    count = archive.get("messages") if isinstance(archive, dict) else None
    return count if isinstance(count, int) else 0


def _step_view(
    run: RunInfo,
    info: StepInfo,
    state: Any,
    previous: tuple[int, Any] | None,
    decoder: Decoder,
    thread: _Thread | None,
) -> dict[str, Any]:
    """A timeline step: the messages it added, else how it changed the state."""
    entries: list[Entry] = []
    changes: list[tuple[str, str, str]] = []
    note = None
    raw = stored_messages(run.kind, state)
    old = stored_messages(run.kind, previous[1]) if previous else None
    if raw is not None:
        start = 0
        if old is not None and len(raw) >= len(old) and raw[: len(old)] == old:
            start = len(old)
            if start == len(raw):
                note = "no new messages"
        elif old is not None:
            start = max(0, len(raw) - TIMELINE_MESSAGES)
            note = f"the message list was rewritten ({len(raw)} messages now; the last ones below)"
        if len(raw) - start > TIMELINE_MESSAGES:
            skipped = len(raw) - start - TIMELINE_MESSAGES
            note = f"{skipped} earlier messages: see the state page"
            start += skipped
        found = transcript(run.kind, state, decoder, start=start)
        entries = found.entries if found else []
    elif previous is None:
        note = "first kept state"
    else:
        ops = diff(previous[1], state)
        changes = [
            (op["op"], op["path"] or "/", _short(op["value"]) if "value" in op else "")
            for op in ops[:STEP_CHANGES]
        ]
        more = f" (the first {STEP_CHANGES} below)" if len(ops) > STEP_CHANGES else ""
        note = f"{len(ops)} change{'s' if len(ops) != 1 else ''} to the state{more}"
    checkpoint = thread.by_step.get(info.step) if thread else None
    fields: dict[str, Any] = {}
    if checkpoint:
        try:
            meta = json.loads(checkpoint.metadata)
        except ValueError:
            meta = {}
        if isinstance(meta, dict):
            fields = {k: meta[k] for k in ("source", "step") if k in meta}
    return {
        "step": info.step,
        "kind": info.kind,
        "is_open": info.is_open,
        "stored": info.stored_bytes,
        "state": info.state_bytes,
        "updated_at": info.updated_at,
        "previous": previous[0] if previous else None,
        "note": note,
        "entries": entries,
        "changes": changes,
        "offset": _archived(state),
        "checkpoint": checkpoint,
        "checkpoint_fields": fields,
        "writes": thread.writes.get(checkpoint.checkpoint_id, []) if thread and checkpoint else [],
    }


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHORT_VALUE else text[: SHORT_VALUE - 1] + "…"


def _pager(rid: UUID, steps: list[int], begin: int, end: int, live: bool) -> dict[str, Any] | None:
    if len(steps) <= TIMELINE_STEPS:
        return None

    def at(position: int) -> str:
        query: dict[str, Any] = {"from": steps[position]}
        if live:
            query["live"] = 1
        return path("runs", rid, query=query) + "#timeline"

    last_page = max(0, len(steps) - TIMELINE_STEPS)
    return {
        "first": steps[begin],
        "last": steps[end - 1],
        "from_index": begin + 1,
        "to_index": end,
        "oldest": at(0) if begin > 0 else None,
        "older": at(max(0, begin - TIMELINE_STEPS)) if begin > 0 else None,
        "newer": at(min(last_page, end)) if end < len(steps) else None,
        "newest": at(last_page) if end < len(steps) else None,
    }


def run_page(view: View, run_id: str, query: Mapping[str, str] | None = None) -> str:
    """A run: recovery, its record, storage charts, a page of its timeline, its config."""
    query = query or {}
    rid = as_run_id(run_id)
    store = view.store
    run = store.get_run(rid)
    summary = run_summaries(store, run_id=rid, limit=1)[0]
    infos = store.steps(rid)
    steps = [i.step for i in infos]
    blobs = Blobs(store, rid)
    decoder = _decoder(blobs)

    # The page of the timeline: TIMELINE_STEPS kept steps from ?from= (default: the newest).
    wanted = _int(query, "from")
    begin = max(0, len(steps) - TIMELINE_STEPS)
    if wanted is not None:
        begin = next((i for i, s in enumerate(steps) if s >= wanted), begin)
    end = min(len(steps), begin + TIMELINE_STEPS)
    window = kept_window(store, rid, steps[max(0, begin - 1)], steps[end - 1]) if steps else []
    states = {k.step: k.state for k in window}
    head_state = states.get(steps[-1]) if steps else None
    if steps and steps[-1] not in states:
        latest = stored_state(store, rid)
        head_state = latest.state if latest else None

    layout = kinds.kind_of(run.kind, head_state)
    thread = _thread(view, run, decoder, siblings=True) if run.kind == kinds.LANGGRAPH else None
    head = transcript(run.kind, head_state, decoder) if head_state is not None else None
    pending_channels = (
        [w["channel"] for w in thread.writes.get(thread.checkpoint_id, [])]
        if thread and thread.checkpoint_id
        else []
    )
    assessment = assess(
        run,
        head,
        now=datetime.now(UTC),
        orphan_after=view.orphan_after,
        archived=_archived(head_state),
        pending_channels=pending_channels,
    )

    timeline = []
    for position in range(begin, end):
        info = infos[position]
        before = infos[position - 1].step if position > 0 else None
        previous = (before, states[before]) if before is not None and before in states else None
        timeline.append(_step_view(run, info, states[info.step], previous, decoder, thread))

    live = query.get("live") == "1" and run.status == "active"
    keep = {"from": query.get("from")} if query.get("from") else {}
    title = kinds.title_of(run.kind, run.metadata)
    return render(
        "run.html",
        title=title or f"{_TITLES.get(layout, 'Run')} {rid}",
        subtitle=(f"{_TITLES.get(layout, 'Run')} · run {rid}" if title else None),
        store=view.label,
        crumbs=[],
        refresh=LIVE_SECONDS if live else None,
        live_href=path("runs", rid, query=keep | {"live": 1}),
        stop_href=path("runs", rid, query=keep),
        run=run,
        layout=layout,
        summary=summary,
        per_step=round(summary.bytes_per_step) if summary.bytes_per_step else None,
        assessment=assessment,
        usage=_usage(run, head),
        thread=thread,
        session_id=run.metadata.get("session_id") if run.kind == kinds.SESSION else None,
        last_writes=thread.writes.get(thread.checkpoint_id, [])
        if thread and thread.checkpoint_id
        else [],
        blobs=blobs,
        stored_chart=stored_bytes_chart(
            [StepSize(i.step, i.kind, i.stored_bytes, i.state_bytes) for i in infos]
        ),
        growth_chart=growth_chart(
            [StepSize(i.step, i.kind, i.stored_bytes, i.state_bytes) for i in infos]
        ),
        kept=len(steps),
        bar_group=group_size(len(steps)),
        pager=_pager(rid, steps, begin, end, live),
        timeline=timeline,
        answered=head.answered() | _inline_answers(head) if head else set(),
        steps=steps,
        redacted=_redacted(run, thread),
        metadata={k: v for k, v in run.metadata.items() if not k.startswith(RECORD_PREFIX)},
    )


def _redacted(run: RunInfo, thread: _Thread | None) -> list[tuple[str, str, str]]:
    """What the redactors removed, as (step or checkpoint, path, kind); never a value.

    Runs, conversations and sessions record it in the run's metadata; LangGraph threads
    in each checkpoint's metadata (``"redactions"``)."""
    found = [
        (f"step {step}", r.path, r.kind)
        for step, records in records_in(run.metadata).items()
        for r in records
    ]
    for step, checkpoint in sorted(thread.by_step.items()) if thread else ():
        try:
            meta = orjson.loads(checkpoint.metadata)
        except orjson.JSONDecodeError:
            continue
        records = meta.get("redactions") if isinstance(meta, dict) else None
        for r in records if isinstance(records, list) else ():
            if isinstance(r, dict):
                found.append((f"step {step}", str(r.get("path")), str(r.get("kind"))))
    return found


def _inline_answers(found: Transcript) -> set[str]:
    return {c.call_id for e in found.entries for c in e.calls if c.has_result and c.call_id}


# -- the state at a step -----------------------------------------------------------------


def _fork_command(view: View, run: RunInfo, step: int) -> tuple[str, str | None]:
    url, note = view.url_for_commands()
    command = f"agentckpt --url {url} fork {run.run_id} --step {step}"
    return command, note


def step_page(view: View, run_id: str, step: int) -> str:
    """The state of a run at one kept step: its messages, the whole state, and how to
    fork from it."""
    rid = as_run_id(run_id)
    store = view.store
    run = store.get_run(rid)
    checkpoint = stored_state(store, rid, step)
    assert checkpoint is not None  # a named step is found or raises
    infos = store.steps(rid)
    steps = [i.step for i in infos]
    position = steps.index(step)
    blobs = Blobs(store, rid)
    decoder = _decoder(blobs)
    state = checkpoint.state
    found = transcript(run.kind, state, decoder)
    layout = kinds.kind_of(run.kind, state)
    thread = _thread(view, run, decoder, siblings=False) if layout == kinds.LANGGRAPH else None
    here = thread.by_step.get(step) if thread else None
    command, note = _fork_command(view, run, step)
    if thread and here:
        config = {
            "configurable": {
                "thread_id": thread.thread_id,
                "checkpoint_ns": thread.namespace,
                "checkpoint_id": here.checkpoint_id,
            }
        }
        command = (
            f"# LangGraph's own time travel (a new branch of the thread):\n"
            f"graph.invoke(None, {json.dumps(config)})\n"
            f"# or a copy of this state as a new agentckpt run (not a LangGraph thread):\n"
            f"{command}"
        )
    title = kinds.title_of(run.kind, run.metadata)
    return render(
        "step.html",
        title=f"Step {step}",
        subtitle=(title + " · " if title else "") + f"run {rid}",
        store=view.label,
        crumbs=[(path("runs", rid), title or f"run {str(rid)[:8]}")],
        refresh=None,
        run_id=rid,
        info=infos[position],
        previous=steps[position - 1] if position > 0 else None,
        next=steps[position + 1] if position + 1 < len(steps) else None,
        checkpoint=here,
        fork_command=command,
        fork_note=note,
        writes_here=thread.writes.get(here.checkpoint_id, []) if thread and here else [],
        transcript=found,
        answered=(found.answered() | _inline_answers(found)) if found else set(),
        offset=_archived(state),
        blobs=blobs,
        decoded=decoder.tree(state) if layout == kinds.LANGGRAPH else None,
        state=state,
    )


# -- a diff ------------------------------------------------------------------------------


_MISSING = object()


def _at(doc: Any, pointer: str) -> Any:
    """The value at a JSON Pointer, or _MISSING."""
    if pointer == "":
        return doc
    node = doc
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _sides(before: Any, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each op with the value at its path before and after it, applied one by one."""
    rows = []
    working = before
    for op in ops[:DIFF_OPS]:
        old = _at(working, op["path"])
        if op["op"] in ("move", "copy"):
            old_source = _at(working, op["from"])
        working = apply(working, [op])
        if "value" in op:
            new = op["value"]  # add and replace (an append's path "/-" names no element)
        else:
            new = _at(working, op["path"]) if op["op"] != "remove" else _MISSING
        if op["op"] == "move":
            old = old_source
        rows.append(
            {
                "op": op["op"],
                "path": op["path"],
                "source": op.get("from"),
                "has_before": old is not _MISSING and op["op"] != "add",
                "before": None if old is _MISSING else old,
                "has_after": new is not _MISSING,
                "after": None if new is _MISSING else new,
            }
        )
    return rows


def diff_page(view: View, run_id: str, query: Mapping[str, str]) -> str:
    """The JSON Patch from the state at step ``a`` to the state at step ``b``, each
    operation with the value before it and after it."""
    rid = as_run_id(run_id)
    store = view.store
    run = store.get_run(rid)
    steps = [info.step for info in store.steps(rid)]
    a, b = _int(query, "a"), _int(query, "b")
    if a is None or b is None:
        if len(steps) < 2:
            raise InvalidValueError("", f"run {rid} has fewer than two kept steps to compare")
        a, b = steps[-2], steps[-1]
    before = _state(view, rid, a)
    after = _state(view, rid, b)
    ops = diff(before, after)
    title = kinds.title_of(run.kind, run.metadata)
    return render(
        "diff.html",
        title=f"Diff: step {a} → step {b}",
        subtitle=(title + " · " if title else "") + f"run {rid}",
        store=view.label,
        crumbs=[(path("runs", rid), title or f"run {str(rid)[:8]}")],
        refresh=None,
        run_id=rid,
        steps=steps,
        a=a,
        b=b,
        ops=_sides(before, ops),
        patch_bytes=len(json.dumps(ops, ensure_ascii=False).encode()),
        blobs=Blobs(store, rid),
    )


def _state(view: View, rid: Any, step: int) -> Any:
    found = stored_state(view.store, rid, step)
    assert found is not None  # a named step is found or raises
    return found.state


def error_page(label: str, status: int, message: str) -> str:
    """A page that says what went wrong."""
    return render(
        "error.html",
        title=str(status),
        subtitle=None,
        store=label,
        crumbs=[],
        refresh=None,
        message=message,
    )
