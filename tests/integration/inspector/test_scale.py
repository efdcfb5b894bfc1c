"""10,000 runs page in well under a second: measured on both backends, printed, not asserted.

The runs are inserted in one SQL statement; the walk pages through all of them with
``page_runs`` (the library call the inspector's list and, later, ``agentckpt runs list
--after`` use), checks that every run is seen exactly once and that the count matches,
then does the same through the inspector's list page with a filter.
"""

from __future__ import annotations

import re
import time

import pytest

from agentckpt import Store
from agentckpt.ops.views import RunFilter, page_runs
from tests.integration.inspector.conftest import fetch, serving
from tests.integration.inspector.fixtures import bulk_runs

RUNS = 10_000
PAGE = 100


def test_ten_thousand_runs_page_quickly(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    bulk_runs(url, RUNS)
    with Store.connect(url, migrate=False) as store:
        seen: list[object] = []
        times = []
        after = None
        while True:
            started = time.perf_counter()
            page = page_runs(store, after=after, limit=PAGE)
            times.append(time.perf_counter() - started)
            assert page.matching == RUNS
            seen += [r.run_id for r in page.runs]
            if page.next is None:
                break
            after = page.next.to_text()  # the cursor as a URL carries it
        assert len(seen) == RUNS
        assert len(set(seen)) == RUNS
        failed = page_runs(store, RunFilter(status="failed", kind="conversation"), limit=PAGE)
        assert failed.matching == sum(1 for i in range(1, RUNS + 1) if i % 10 == 0 and i % 3 == 0)
        with serving(store) as base:
            started = time.perf_counter()
            body = fetch(base + "?status=failed&kind=conversation&q=agent-3").body
            page_time = time.perf_counter() - started
        expected = sum(1 for i in range(1, RUNS + 1) if i % 10 == 0 and i % 3 == 0 and i % 7 == 3)
        assert f"<strong>{expected:,}</strong> of {RUNS:,} runs match" in body
        assert len(re.findall(r'<td><a class="mono" href="/runs/', body)) == min(expected, 50)
    with capsys.disabled():
        print(
            f"\n{store.backend.dialect}: {RUNS} runs in {len(times)} pages of {PAGE}: "
            f"{1000 * sum(times) / len(times):.1f} ms per page on average, "
            f"{1000 * max(times):.1f} ms the slowest; the filtered list page "
            f"{1000 * page_time:.0f} ms over HTTP"
        )
