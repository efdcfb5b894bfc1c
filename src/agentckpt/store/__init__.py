"""The store: durable runs and their steps on SQLite or PostgreSQL.

:class:`Store` (generated from :class:`AsyncStore`, same methods) is what every front
door builds on: commits that are durable when they return, idempotent and fenced, and
reads that rebuild a state from its newest snapshot and the deltas after it.
"""

from __future__ import annotations

from agentckpt.store.store import Store
from agentckpt.store.store_async import AsyncStore

__all__ = ["AsyncStore", "Store"]
