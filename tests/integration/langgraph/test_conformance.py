"""LangGraph's published checkpointer conformance suite, on SQLite and PostgreSQL.

The suite drives a saver through its async methods; ``SyncDriven`` routes those calls to
the sync methods, so the same suite also checks the sync path (its own store and code).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'agentckpt[langgraph]'"
)
pytest.importorskip(
    "langgraph.checkpoint.conformance",
    reason="the suite is not installed: pip install langgraph-checkpoint-conformance",
)

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from agentckpt.integrations.langgraph import AgentckptSaver


class SyncDriven(AgentckptSaver):
    """Every async method calls its sync twin, so the suite exercises the sync API."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **options: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        for item in self.list(config, **options):
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        return self.put(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


def _sync_saver(url: str) -> Iterator[SyncDriven]:
    with SyncDriven.from_url(url) as saver:
        yield saver


@pytest.mark.parametrize("driven", ["async", "sync"])
async def test_conformance_suite_passes_every_capability(url: str, driven: str) -> None:
    @checkpointer_test(name=f"agentckpt-{driven}")
    async def factory() -> AsyncIterator[AgentckptSaver]:
        if driven == "async":
            async with AgentckptSaver.afrom_url(url) as saver:
                yield saver
        else:
            for saver in _sync_saver(url):
                yield saver

    report = await validate(factory)

    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert not failures, failures
    # Every capability, the optional ones included, was detected and run.
    assert set(report.results) == {c.value for c in Capability}
    assert all(r.detected and r.tests_passed > 0 for r in report.results.values())
    assert report.conformance_level() == "FULL"
