"""The inspector end to end in headless chromium: navigate, read, screenshot, check pixels.

It runs the real ``agentckpt inspect`` command and a real browser. Every request the
browser makes is recorded: all must go to the inspector itself (no CDN, works offline).
The second test photographs a page of every kind (the pictures of docs/inspector.md,
``screenshot.py``) and checks what each shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.integration.inspector.browser import browser_page
from tests.integration.inspector.conftest import start_inspect, stop
from tests.integration.inspector.png import colors
from tests.integration.inspector.screenshot import SHOTS, take_all
from tests.support.sample_store import SCRIPT, populate


def test_inspector_in_a_real_browser(sqlite_url: str, tmp_path: Path) -> None:
    sample = populate(sqlite_url)
    process = start_inspect(sqlite_url)
    base = process.line.split()[2]
    origin = urlsplit(base).netloc
    requests: list[str] = []
    foreign: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []
    try:
        with browser_page() as page:

            def route(request_route: Any) -> None:
                url = request_route.request.url
                requests.append(url)
                if urlsplit(url).netloc != origin:
                    foreign.append(url)
                    request_route.abort()
                else:
                    request_route.continue_()

            page.route("**/*", route)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

            page.goto(base)
            assert page.locator("h1").inner_text() == "Runs and conversations"
            assert page.locator("table.runs tbody tr").count() == 3

            page.get_by_role("link", name=str(sample.conversation)).click()
            page.wait_for_url(f"**/runs/{sample.conversation}")
            assert "Timeline (12 kept steps)" in page.locator("main").inner_text()
            assert page.locator("svg.chart-svg").count() == 2
            assert page.locator("rect.bar").count() == 12
            assert page.locator(".tool-call").count() >= 12
            # The hostile message is shown as text, and no script exists in the page.
            assert page.get_by_text(SCRIPT).count() >= 1
            assert page.evaluate("document.scripts.length") == 0

            shot = page.screenshot(path=str(tmp_path / "run.png"))
            palette = colors(shot)
            # Not blank: many colors (text antialiasing, charts), the header's blue, and
            # no single color covering nearly everything.
            assert len(palette) > 40
            assert (31, 78, 121) in palette  # --accent, the header bar and snapshot bars
            assert max(palette.values()) / sum(palette.values()) < 0.9

            page.locator("#step-12").get_by_role("link", name="state").click()
            page.wait_for_url("**/steps/12")
            assert page.locator("h1").inner_text() == "Step 12"
            assert "Messages (13)" in page.locator("main").inner_text()

            page.get_by_role("link", name="diff from previous").click()
            page.wait_for_url("**/diff?a=11&b=12")
            page.select_option("select[name=a]", "3")
            page.get_by_role("button", name="diff").click()
            page.wait_for_url("**/diff?a=3&b=12")
            assert page.locator("h1").inner_text() == "Diff: step 3 → step 12"
            assert page.locator("td .op-add").count() == 9
    finally:
        stop(process)
    assert requests  # the route saw the traffic
    assert foreign == []
    assert dialogs == []
    assert errors == []


def test_a_page_of_every_kind_in_a_real_browser(tmp_path: Path) -> None:
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    texts = take_all(tmp_path, demo=False)
    assert set(texts) == {shot.name for shot in SHOTS}
    for shot in SHOTS:
        assert (tmp_path / shot.name).stat().st_size > 10_000, shot.name
    # The filtered list of 10,000 runs counts what matches, not the whole store.
    assert "of 10,007 runs match" in texts["inspector-list.png"]
