"""Fixtures: the conversation API on SQLite and PostgreSQL, sync and async.

The async API runs on a private event loop behind a small synchronous facade (as the
store fixtures do), so one test body drives both ``Conversations`` and
``AsyncConversations``, and the handles they return.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentckpt import AsyncStore, Store
from agentckpt.conversation import (
    AsyncConversation,
    AsyncConversations,
    Conversations,
)
from tests.support.conversation import FakeClock

WRAPPED = (AsyncConversation, AsyncConversations, AsyncStore)


class Facade:
    """Drives an async object synchronously; wraps the async objects it returns."""

    def __init__(self, inner: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.inner = inner
        self.loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if isinstance(attr, WRAPPED):
            return Facade(attr, self.loop)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if callable(kwargs.get("rerun")):
                rerun = kwargs["rerun"]

                async def arerun(tool_call: Any) -> Any:
                    return rerun(tool_call)

                kwargs["rerun"] = arerun
            result = self.loop.run_until_complete(attr(*args, **kwargs))
            if isinstance(result, WRAPPED):
                return Facade(result, self.loop)
            return result

        return call


ConversationsFactory = Callable[..., Any]


@pytest.fixture
def clock() -> FakeClock:
    """A hand-driven clock for the flush interval."""
    return FakeClock()


@pytest.fixture(params=["sync", "async"])
def api(request: pytest.FixtureRequest) -> str:
    """Which API the test drives."""
    return str(request.param)


@pytest.fixture
def make_conversations(api: str, url: str, clock: FakeClock) -> Iterator[ConversationsFactory]:
    """Open conversation APIs on this test's database; each gets its own store."""
    loop = asyncio.new_event_loop()
    stores: list[Any] = []

    def make(**options: Any) -> Any:
        store_options = options.pop("store_options", {})
        options.setdefault("clock", clock)
        if api == "sync":
            store = Store.connect(url, **store_options)
            stores.append(store)
            return Conversations(store, **options)
        astore = loop.run_until_complete(AsyncStore.connect(url, **store_options))
        stores.append(astore)
        return Facade(AsyncConversations(astore, **options), loop)

    make.url = url  # type: ignore[attr-defined]
    make.api = api  # type: ignore[attr-defined]
    yield make
    for store in stores:
        if isinstance(store, AsyncStore):
            loop.run_until_complete(store.close())
        else:
            store.close()
    loop.close()


@pytest.fixture
def conversations(make_conversations: ConversationsFactory) -> Any:
    """The conversation API (sync or async) on a fresh SQLite or PostgreSQL database."""
    return make_conversations()


def raw_store(conversations: Any) -> Any:
    """The store under a conversation API (the real one, not the test facade)."""
    return getattr(conversations, "inner", conversations).store


def spy(obj: Any, name: str, pick: Callable[[tuple[Any, ...], Any], Any]) -> list[Any]:
    """Record ``pick(args, result)`` for each call of ``obj.<name>`` (sync or async) that
    returned, in order."""
    calls: list[Any] = []
    original = getattr(obj, name)

    if inspect.iscoroutinefunction(original):

        async def spied_async(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            calls.append(pick(args, result))
            return result

        setattr(obj, name, spied_async)
    else:

        def spied(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            calls.append(pick(args, result))
            return result

        setattr(obj, name, spied)
    return calls


def spy_commits(conversations: Any) -> list[Any]:
    """The StepInfo of every commit the store makes from now on, in order."""
    return spy(raw_store(conversations), "commit", lambda args, result: result)


def spy_reads(conversations: Any) -> list[str]:
    """The name of every query the store's backend reads from now on, in order."""
    return spy(raw_store(conversations).backend, "read", lambda args, result: args[0])
