"""The screenshot in docs/inspector.md: ``python -m tests.integration.inspector.screenshot PATH``.

It runs the demo agent for 60 steps into a temporary SQLite file, serves it with
``agentckpt inspect`` and photographs the run's page in headless chromium.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

from agentckpt.demo import agent
from tests.integration.inspector.browser import browser_page
from tests.integration.inspector.conftest import start_inspect, stop
from tests.integration.inspector.png import colors


def take(path: Path) -> None:
    """Write the screenshot to ``path`` and check it is not blank."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/agentckpt-demo.db"
        run_id = str(uuid.uuid4())
        agent.run(url, run_id, 60, report=False)
        process = start_inspect(url)
        try:
            base = process.line.split()[2]
            with browser_page(width=1280, height=1100) as page:
                page.goto(f"{base}runs/{run_id}")
                data = page.screenshot(path=str(path))
        finally:
            stop(process)
    if len(colors(data)) < 40:
        raise SystemExit(f"{path}: the screenshot looks blank")


if __name__ == "__main__":
    take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img/inspector.png"))
