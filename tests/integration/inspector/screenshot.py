"""The screenshots in docs/inspector.md: ``python -m tests.integration.inspector.screenshot DIR``.

It writes a run of every kind (``fixtures.populate``) and 10,000 more runs into a
temporary SQLite file, serves it with ``agentckpt inspect``, and photographs one page of
each kind in headless chromium, checking that each shows what it must (:data:`SHOTS`).
``inspector.png`` is the demo agent's run, as before. The browser test calls
:func:`take_all` into a temporary folder, so the same checks run in the suite.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentckpt.demo import agent
from tests.integration.inspector import fixtures
from tests.integration.inspector.browser import browser_page
from tests.integration.inspector.conftest import start_inspect, stop
from tests.integration.inspector.png import colors

BULK = 10_000


@dataclass(frozen=True)
class Shot:
    """One page to photograph: its file, its address, where the picture starts (a CSS
    selector, None: the top), its height, and texts the page must show."""

    name: str
    address: Callable[[fixtures.Fixtures], str]
    start: str | None
    height: int
    shows: tuple[str, ...]


SHOTS = (
    Shot(
        "inspector-langgraph.png",
        lambda f: f"runs/{f.thread}",
        None,
        1500,
        (
            fixtures.THREAD_ID,
            "LangGraph thread",
            "waiting on an interrupt",
            "send this answer?",
            "WEATHER IN BERLIN (2 messages so far)",
            "answers call-m1",
        ),
    ),
    Shot(
        "inspector-session.png",
        lambda f: f"runs/{f.session}",
        None,
        1700,
        (
            fixtures.SESSION_ID,
            "Agents SDK session",
            "The user wants the order status.",
            "lookup_order",
            "Order 1234 shipped with DHL.",
            "no result",
        ),
    ),
    Shot(
        "inspector-conversation.png",
        lambda f: f"runs/{f.finished}",
        "h2#timeline",
        1000,
        ("What's the weather in Berlin this year?", "get_weather", "application/json", "forecast"),
    ),
    Shot(
        "inspector-recovery.png",
        lambda f: f"runs/{f.pending}",
        None,
        1150,
        (
            "open turn",
            "pending user message",
            "dangling tool call",
            "What recovery would do now",
            "replay it",
            "send_email",
        ),
    ),
    Shot(
        "inspector-long-run.png",
        lambda f: f"runs/{f.long_run}?from=101",
        "h2:text('Storage')",
        1100,
        (
            "Timeline (300 kept steps)",
            "steps 101\u2013150 (101\u2013150 of 300)",
            "← older",
            "newer →",
            "each bar: the largest of 2 consecutive steps",
        ),
    ),
    Shot(
        "inspector-list.png",
        lambda f: "?kind=conversation&status=active&flag=attention",
        None,
        1100,
        ("runs match", "needs attention", "orphan", "open turn", "next 50 →", "Tokens and cost"),
    ),
    Shot(
        "inspector-diff.png",
        lambda f: f"runs/{f.long_run}/diff?a=149&b=150",
        None,
        560,
        ("Diff: step 149 → step 150", "replace", "crawl", "index", "remove", "/scratch"),
    ),
)


def _check(name: str, data: bytes) -> None:
    if len(colors(data)) < 40:
        raise AssertionError(f"{name}: the screenshot looks blank")


def photograph(page: Any, base: str, shot: Shot, runs: fixtures.Fixtures, folder: Path) -> str:
    """Open the shot's page, check what it shows, and write its picture; its text."""
    page.goto(base + shot.address(runs))
    shown = str(page.locator("main").inner_text())
    missing = [t for t in shot.shows if t not in shown]
    if missing:
        raise AssertionError(f"{shot.name}: the page does not show {missing}")
    if page.evaluate("document.scripts.length") != 0:
        raise AssertionError(f"{shot.name}: the page has a script")
    top = 0.0
    if shot.start:
        box = page.locator(shot.start).first.bounding_box()
        top = max(0.0, box["y"] - 16) if box else 0.0
    full = float(page.evaluate("document.documentElement.scrollHeight"))
    height = min(float(shot.height), full - top)
    data = page.screenshot(
        path=str(folder / shot.name),
        full_page=True,
        clip={"x": 0, "y": top, "width": 1280, "height": height},
    )
    _check(shot.name, data)
    return shown


def take_all(folder: Path, *, demo: bool = True) -> dict[str, str]:
    """Every shot of :data:`SHOTS` (and the demo run's, with ``demo``) into ``folder``;
    returns each page's text by shot name."""
    texts: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{scratch}/kinds.db"
        runs = fixtures.populate(url)
        fixtures.bulk_runs(url, BULK)
        demo_url = f"sqlite:///{scratch}/agentckpt-demo.db"
        run_id = str(uuid.uuid4())
        if demo:
            agent.run(demo_url, run_id, 60, report=False)
        process = start_inspect(url)
        try:
            base = process.line.split()[2]
            with browser_page(width=1280, height=900) as page:
                for shot in SHOTS:
                    texts[shot.name] = photograph(page, base, shot, runs, folder)
        finally:
            stop(process)
        if demo:
            process = start_inspect(demo_url)
            try:
                base = process.line.split()[2]
                with browser_page(width=1280, height=1100) as page:
                    page.goto(f"{base}runs/{run_id}")
                    _check("inspector.png", page.screenshot(path=str(folder / "inspector.png")))
            finally:
                stop(process)
    return texts


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    target.mkdir(parents=True, exist_ok=True)
    for name in take_all(target):
        print(target / name)
