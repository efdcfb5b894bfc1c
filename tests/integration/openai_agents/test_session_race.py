"""Two sessions of one session id in two stores race: no pop returns an item twice, no
identical append is lost (issue 12: the second of two writers that committed the same
state used to be taken for a retry of the first)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "agents",
    reason="the OpenAI Agents SDK is not installed: pip install 'agentckpt[openai-agents]'",
)

from agentckpt import Store
from agentckpt.integrations.openai_agents import AgentckptSession

ROUNDS = 30


def _race(work: Callable[[AgentckptSession], Any], url: str) -> list[Any]:
    stores = [Store.connect(url), Store.connect(url)]
    sessions = [AgentckptSession("raced", store=store) for store in stores]
    results: list[Any] = [None, None]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run(n: int) -> None:
        try:
            barrier.wait()
            results[n] = work(sessions[n])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for store in stores:
            store.close()
    assert not errors, errors
    return results


def test_concurrent_pops_return_each_item_once(url: str) -> None:
    with AgentckptSession("raced", url=url) as setup:
        asyncio.run(setup.add_items([{"i": i} for i in range(2 * ROUNDS)]))

    def pop_all(session: AgentckptSession) -> list[Any]:
        popped = []
        while (item := asyncio.run(session.pop_item())) is not None:
            popped.append(item["i"])
        return popped

    results = _race(pop_all, url)
    assert sorted(results[0] + results[1]) == list(range(2 * ROUNDS))
    with AgentckptSession("raced", url=url) as after:
        assert asyncio.run(after.get_items()) == []


def test_concurrent_identical_appends_are_all_kept(url: str) -> None:
    def append(session: AgentckptSession) -> int:
        for _ in range(ROUNDS):
            asyncio.run(session.add_items([{"role": "user", "content": "same"}]))
        return ROUNDS

    assert _race(append, url) == [ROUNDS, ROUNDS]
    with AgentckptSession("raced", url=url) as after:
        items = asyncio.run(after.get_items())
    assert items == [{"role": "user", "content": "same"}] * (2 * ROUNDS)
