"""The inspector's pages: runs, a run's timeline, the state at a step, a diff.

Each function reads what it needs from the store and returns the whole page's HTML.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentckpt._core.delta import diff
from agentckpt.errors import InvalidValueError
from agentckpt.inspector.charts import StepSize, growth_chart, stored_bytes_chart
from agentckpt.inspector.markup import (
    badge,
    esc,
    json_html,
    link,
    page,
    path,
    pretty_json,
    size,
    table,
    when,
)
from agentckpt.inspector.messages import messages_html, messages_of
from agentckpt.ops.units import human_bytes
from agentckpt.ops.views import (
    kept_states,
    run_summaries,
    stored_chain,
    stored_state,
    table_sizes,
)
from agentckpt.store.store import Store, as_run_id

# The timeline shows this many of the newest kept steps; older ones stay a link away.
TIMELINE_STEPS = 200
RUNS_PER_PAGE = 200
TIMELINE_MESSAGES = 20


@dataclass(frozen=True, slots=True)
class View:
    """What every page needs: the store and how to name it."""

    store: Store
    label: str


def _int(query: Mapping[str, str], name: str) -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidValueError(
            "", f"query parameter {name}={text!r} is not a step number"
        ) from None


def index(view: View, query: Mapping[str, str]) -> str:
    """All runs and conversations, newest first, with status and size."""
    kind = query.get("kind") or None
    runs = run_summaries(
        view.store,
        kind=kind,
        status=query.get("status") or None,
        agent_id=query.get("agent") or None,
        limit=RUNS_PER_PAGE,
    )
    tables = {t.table: t for t in table_sizes(view.store)}
    tabs = [("all", None), ("conversations", "conversation"), ("runs", "run")]
    tab_html = "".join(
        link(
            path(query={"kind": value}) if value else "/",
            name,
            cls="current" if value == kind else None,
        )
        for name, value in tabs
    )
    rows = [
        (
            link(path("runs", s.run_id), str(s.run_id), cls="mono"),
            esc(s.kind),
            esc(s.agent_id or "-"),
            badge(s.status),
            esc(s.head_step if s.head_step is not None else "-"),
            esc(s.rows),
            size(s.stored_bytes),
            size(round(s.bytes_per_step)) if s.bytes_per_step else "-",
            when(s.updated_at),
        )
        for s in runs
    ]
    total_runs = tables["runs"].rows if "runs" in tables else len(runs)
    stored = sum(t.payload_bytes for t in tables.values())
    summary = (
        f'<p class="note">{total_runs} runs in this store, {esc(human_bytes(stored))} of '
        f"payload in {sum(t.rows for t in tables.values())} rows."
        + (
            f" Showing the {RUNS_PER_PAGE} most recently updated."
            if len(runs) == RUNS_PER_PAGE
            else ""
        )
        + "</p>"
    )
    body = f'<div class="tabs">{tab_html}</div>{summary}' + table(
        ("run", "kind", "agent", "status", "step", "rows", "stored", "per step", "updated"),
        rows,
        numeric=(4, 5, 6, 7),
    )
    title = {"conversation": "Conversations", "run": "Runs"}.get(
        kind or "", "Runs and conversations"
    )
    return page(title, body, store=view.label)


def _facts(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def _step_summary(rid: Any, before: Any, after: Any, prev_messages: list[Any] | None) -> str:
    """What a step changed: the messages it added, else how many patch operations."""
    messages = messages_of(after)
    if messages is not None:
        old = prev_messages or []
        if len(messages) >= len(old) and messages[: len(old)] == old:
            added = messages[len(old) :]
            if not added:
                return '<p class="note">no new messages</p>'
            if len(added) > TIMELINE_MESSAGES:
                # A first kept step (after pruning) holds the whole history: show its end.
                skipped = len(added) - TIMELINE_MESSAGES
                return (
                    f'<p class="note">{skipped} earlier messages: see the state page</p>'
                    + messages_html(rid, added[skipped:], start=len(old) + skipped)
                )
            return messages_html(rid, added, start=len(old))
        shown = messages[-20:]
        return (
            f'<p class="note">the message list was rewritten ({len(messages)} messages now; '
            f"the last {len(shown)} below)</p>"
            + messages_html(rid, shown, start=len(messages) - len(shown))
        )
    if before is None:
        return '<p class="note">first kept state</p>'
    ops = diff(before, after)
    return f'<p class="note">{len(ops)} change{"s" if len(ops) != 1 else ""} to the state</p>'


def run_page(view: View, run_id: str) -> str:
    """A run: its record, storage charts, the timeline of its kept steps, config."""
    rid = as_run_id(run_id)
    run = view.store.get_run(rid)
    summary = run_summaries(view.store, run_id=rid, limit=1)[0]
    rows = stored_chain(view.store, rid)
    timeline: deque[str] = deque(maxlen=TIMELINE_STEPS)
    sizes: list[StepSize] = []
    previous: Any = None
    previous_messages: list[Any] | None = None
    previous_step: int | None = None
    for kept in kept_states(rid, rows):
        sizes.append(StepSize(kept.step, kept.kind, kept.stored_bytes, kept.state_bytes))
        links = [link(path("runs", rid, "steps", kept.step), "state")]
        if previous_step is not None:
            links.append(
                link(
                    path("runs", rid, "diff", query={"a": previous_step, "b": kept.step}),
                    f"diff from {previous_step}",
                )
            )
        timeline.append(
            f'<div class="step" id="step-{kept.step}"><div class="step-head">'
            f'<span class="n">step {kept.step}</span>'
            f"<span>{esc(kept.kind)}{' (open)' if kept.is_open else ''} · "
            f"{size(kept.stored_bytes)} stored · state {size(kept.state_bytes)} · "
            f"{when(kept.updated_at)}</span>{' · '.join(links)}</div>"
            + _step_summary(rid, previous, kept.state, previous_messages)
            + "</div>"
        )
        previous, previous_step = kept.state, kept.step
        previous_messages = messages_of(kept.state)
    parent = (
        link(path("runs", run.parent_run_id), str(run.parent_run_id))
        + f" at step {run.parent_step}"
        if run.parent_run_id
        else "-"
    )
    facts = _facts(
        [
            ("kind", esc(run.kind)),
            ("agent", esc(run.agent_id or "-")),
            ("status", badge(run.status) + (f" {esc(run.error)}" if run.error else "")),
            ("head step", esc(f"{run.head_step}{' (open)' if run.head_open else ''}")),
            ("snapshot step", esc(run.snapshot_step)),
            ("forked from", parent),
            (
                "lease",
                esc(f"{run.lease_owner}, epoch {run.lease_epoch}") if run.lease_owner else "-",
            ),
            ("created", when(run.created_at)),
            ("updated", when(run.updated_at)),
            (
                "stored",
                f"{size(summary.stored_bytes)} in {summary.rows} rows: steps "
                f"{size(summary.step_bytes)} ({summary.step_rows}), blobs "
                f"{size(summary.blob_bytes)} ({summary.blob_rows}), history "
                f"{size(summary.history_bytes)} ({summary.history_rows})",
            ),
            ("per step", size(round(summary.bytes_per_step)) if summary.bytes_per_step else "-"),
        ]
    )
    legend = (
        '<div class="legend"><span><i class="key key-snapshot"></i>snapshot</span>'
        '<span><i class="key key-delta"></i>delta</span>'
        '<span><i class="key key-cumulative"></i>kept bytes, cumulative</span>'
        '<span><i class="key key-state"></i>whole state size</span></div>'
    )
    charts = (
        '<div class="charts">'
        f'<figure class="chart"><figcaption>Bytes stored per kept step</figcaption>'
        f"{stored_bytes_chart(sizes)}</figure>"
        f'<figure class="chart"><figcaption>Storage growth</figcaption>'
        f"{growth_chart(sizes)}</figure></div>{legend}"
    )
    hidden = len(sizes) - len(timeline)
    note = f'<p class="note">{hidden} older kept steps are not shown.</p>' if hidden > 0 else ""
    body = (
        f'<section class="card">{facts}</section>'
        f"<h2>Storage</h2>{charts}"
        f"<h2>Timeline ({len(sizes)} kept steps)</h2>{note}"
        f'<div class="timeline">{"".join(timeline) or "<p class=note>no steps yet</p>"}</div>'
        f"{_diff_form(rid, [s.step for s in sizes], None, None)}"
        f"<h2>Config</h2>{pretty_json(run.config)}"
        f"<h2>Metadata</h2>{pretty_json(run.metadata)}"
    )
    return page(f"Run {rid}", body, store=view.label)


def _diff_form(rid: Any, steps: list[int], a: int | None, b: int | None) -> str:
    if len(steps) < 2:
        return ""
    a = a if a is not None else steps[-2]
    b = b if b is not None else steps[-1]

    def select(name: str, chosen: int) -> str:
        options = "".join(
            f'<option value="{s}"{" selected" if s == chosen else ""}>step {s}</option>'
            for s in steps
        )
        return f'<select name="{name}" aria-label="{name}">{options}</select>'

    return (
        f'<h2>Compare two steps</h2><form class="diff" method="get" '
        f'action="{esc(path("runs", rid, "diff"))}">{select("a", a)} → {select("b", b)}'
        f'<button type="submit">diff</button></form>'
    )


def step_page(view: View, run_id: str, step: int) -> str:
    """The state of a run at one kept step: its messages and the whole JSON document."""
    rid = as_run_id(run_id)
    checkpoint = stored_state(view.store, rid, step)
    infos = view.store.steps(rid)
    steps = [i.step for i in infos]
    assert checkpoint is not None  # a named step is found or raises
    position = steps.index(step)
    nav = []
    if position > 0:
        nav.append(link(path("runs", rid, "steps", steps[position - 1]), "← previous"))
        nav.append(
            link(
                path("runs", rid, "diff", query={"a": steps[position - 1], "b": step}),
                "diff from previous",
            )
        )
    if position + 1 < len(steps):
        nav.append(link(path("runs", rid, "steps", steps[position + 1]), "next →"))
    info = infos[position]
    facts = _facts(
        [
            ("kind", esc(info.kind) + (" (open)" if info.is_open else "")),
            ("parent step", esc(info.parent_step)),
            ("stored", size(info.stored_bytes) + f" ({esc(info.codec)})"),
            ("state", size(info.state_bytes)),
            ("writes", esc(info.write_version)),
            ("checksum", f'<span class="mono">{esc(info.checksum)}</span>'),
            ("updated", when(info.updated_at)),
        ]
    )
    messages = messages_of(checkpoint.state)
    conversation = (
        f"<h2>Messages ({len(messages)})</h2>{messages_html(rid, messages)}"
        if messages is not None
        else ""
    )
    body = (
        f'<p>{" · ".join(nav)}</p><section class="card">{facts}</section>{conversation}'
        f"<h2>State</h2>{pretty_json(checkpoint.state)}"
    )
    crumbs = [(path("runs", rid), f"run {str(rid)[:8]}")]
    return page(f"Step {step}", body, store=view.label, crumbs=crumbs)


def diff_page(view: View, run_id: str, query: Mapping[str, str]) -> str:
    """The JSON Patch from the state at step ``a`` to the state at step ``b``."""
    rid = as_run_id(run_id)
    steps = [info.step for info in view.store.steps(rid)]
    a, b = _int(query, "a"), _int(query, "b")
    if a is None or b is None:
        if len(steps) < 2:
            raise InvalidValueError("", f"run {rid} has fewer than two kept steps to compare")
        a, b = steps[-2], steps[-1]
    before = _state(view, rid, a)
    after = _state(view, rid, b)
    ops = diff(before, after)
    rows = [
        (
            f'<span class="op-{esc(op["op"])}">{esc(op["op"])}</span>',
            f'<span class="mono">{esc(op["path"])}</span>'
            + (f' <span class="note">from {esc(op["from"])}</span>' if "from" in op else ""),
            json_html(op["value"]) if "value" in op else "",
        )
        for op in ops
    ]
    patch_size = len(json.dumps(ops, ensure_ascii=False).encode())
    body = (
        _diff_form(rid, steps, a, b)
        + f'<p class="note">{len(ops)} operations, {esc(human_bytes(patch_size))} as JSON '
        f"(RFC 6902).</p>" + table(("op", "path", "value"), rows)
    )
    crumbs = [(path("runs", rid), f"run {str(rid)[:8]}")]
    return page(f"Diff: step {a} → step {b}", body, store=view.label, crumbs=crumbs)


def _state(view: View, rid: Any, step: int) -> Any:
    found = stored_state(view.store, rid, step)
    assert found is not None  # a named step is found or raises
    return found.state


def error_page(label: str, status: int, message: str) -> str:
    """A page that says what went wrong."""
    back = link("/", "All runs")
    body = f'<section class="card error"><p>{esc(message)}</p><p>{back}</p></section>'
    return page(f"{status}", body, store=label)
