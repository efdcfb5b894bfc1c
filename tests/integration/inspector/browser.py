"""Drive Debian's chromium with Playwright; fail under CI=true when it is missing.

Install: ``apt-get install -y chromium`` and ``pip install playwright`` (Playwright's own
browser download is not used: ``executable_path`` points at the system chromium).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The system chromium, if installed."""
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(candidate):
            return candidate
    return shutil.which("chromium")


def require_browser() -> str:
    """The chromium path; skip the test without one (fail under CI=true)."""
    reason = None
    path = chromium_path()
    if path is None:
        reason = "no chromium: apt-get install -y chromium"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "no playwright: pip install playwright"
    if reason is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"browser test cannot run under CI=true: {reason}")
        pytest.skip(reason)
    assert path is not None
    return path


@contextmanager
def browser_page(*, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A fresh page in headless chromium."""
    from playwright.sync_api import sync_playwright

    path = require_browser()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()
