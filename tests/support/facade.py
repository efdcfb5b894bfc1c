"""The async store behind a synchronous face, so one test body drives both APIs."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from agentckpt import AsyncStore


class AsyncFacade:
    """Drives an :class:`AsyncStore` through synchronous calls on a private loop."""

    def __init__(self, url: str, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.inner: AsyncStore = self.loop.run_until_complete(AsyncStore.connect(url, **options))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.loop.run_until_complete(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        self.loop.run_until_complete(self.inner.close())
        self.loop.close()
