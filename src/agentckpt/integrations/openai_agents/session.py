"""An OpenAI Agents SDK session backed by agentckpt, on SQLite or PostgreSQL.

Install with ``pip install 'agentckpt[openai-agents]'``. A session is one agentckpt run
(kind ``session``) whose state is ``{"items": [...]}``; each change is committed as a step,
stored as a delta against the previous one, so adding a turn costs about the bytes of the
new items. Items round-trip exactly (key order, U+0000, big integers, nesting).

Example::

    from agents import Agent, Runner
    from agentckpt.integrations.openai_agents.session import AgentckptSession

    with AgentckptSession("user-42", url="sqlite:///sessions.db") as session:
        Runner.run_sync(agent, "Hello", session=session)

The session uses the synchronous :class:`~agentckpt.Store` on worker threads
(``asyncio.to_thread``), so one session object works from ``Runner.run_sync`` (a new event
loop per call), from ``Runner.run`` on any loop, and from several threads at once. Writers
in other processes are detected by the step they expected and retried, never overwritten.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar, cast
from uuid import UUID

from agents.items import TResponseInputItem
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from agentckpt._backends.factory import parse_url
from agentckpt._core.codec import validate
from agentckpt._core.contention import lost_race_pause
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import (
    ConfigurationError,
    InvalidValueError,
    RunNotFoundError,
    StaleHeadError,
)
from agentckpt.ops import kinds
from agentckpt.redaction import Redaction, Redactor, record_metadata, redact
from agentckpt.store.ride_out import ride_out
from agentckpt.store.store import Store
from agentckpt.tenancy import DEFAULT_TENANT, check_tenant

__all__ = ["RUN_KIND", "AgentckptSession", "session_run_id"]

T = TypeVar("T")

RUN_KIND = kinds.SESSION
"""The ``kind`` of the runs that store Agents SDK sessions."""

# Fixed forever: a session id must map to the same run in every process and version.
_SESSION_NAMESPACE = uuid.UUID("9d2c4f0e-1b7a-4e63-8c55-0f3e7a9b2d41")

# Commits retried when another process changed the session between read and write.
_ATTEMPTS = 16


def _url_tenant(url: str | None) -> str:
    """The tenant a session's URL names (``?tenant=``), else the default tenant."""
    if url is None:
        return DEFAULT_TENANT
    options, _ = parse_url(url).resolve()
    return options.tenant


def _shifted(record: Redaction, base: int) -> Redaction:
    """``/items/+<base>/<k>/...`` (a path into the added items) as ``/items/<base+k>/...``."""
    head, _, rest = record.path.removeprefix(f"/items/+{base}/").partition("/")
    return Redaction(f"/items/{base + int(head)}" + (f"/{rest}" if rest else ""), record.kind)


def session_run_id(session_id: str, tenant: str = DEFAULT_TENANT) -> UUID:
    """The id of the run that stores session ``session_id`` of ``tenant``: two tenants'
    sessions of the same id are two runs (the default tenant keeps the ids it had)."""
    if tenant == DEFAULT_TENANT:
        return uuid.uuid5(_SESSION_NAMESPACE, session_id)
    return uuid.uuid5(_SESSION_NAMESPACE, f"{check_tenant(tenant)}\x00{session_id}")


class AgentckptSession:
    """Conversation history of one Agents SDK session, kept as an agentckpt run.

    Implements the SDK's ``Session`` protocol (``get_items``, ``add_items``,
    ``pop_item``, ``clear_session``).

    Args:
        session_id: the SDK's session id.
        url: store URL (``sqlite:///path.db`` or ``postgresql://...``); the session opens
            a :class:`Store` and closes it in :meth:`close`.
        store: an open :class:`Store` to share among many sessions instead of ``url``.
        session_settings: the SDK's settings, or a dict of them (their ``limit`` applies
            to ``get_items``).
        redactors: applied to every string of each added item before it is stored
            (:mod:`agentckpt.redaction`); what they removed is recorded per step in the
            run's metadata.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        url: str | None = None,
        store: Store | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        redactors: Sequence[Redactor] = (),
    ) -> None:
        if (url is None) == (store is None):
            raise ConfigurationError("AgentckptSession needs exactly one of url= and store=")
        if type(session_id) is not str or not session_id:
            raise ConfigurationError(f"session_id must be a non-empty str, got {session_id!r}")
        try:
            session_id.encode("utf-8")
        except UnicodeEncodeError:
            # The id names the run (uuid5 of its UTF-8 bytes) and goes into its metadata.
            raise InvalidValueError(
                "", f"session_id {session_id!r} holds a lone surrogate: it is not UTF-8 text"
            ) from None
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        # The tenant of the store (given, or named by the URL) is part of the run id.
        tenant = store.tenant if store is not None else _url_tenant(url)
        self.run_id = session_run_id(session_id, tenant)
        self.url = url
        self._store = store
        self._owns_store = store is None
        self.redactors: tuple[Redactor, ...] = tuple(redactors)
        # What the redactors removed from the items being added (under self._lock).
        self._redacted: list[Redaction] = []
        # One writer at a time per session in this process: no retries among threads.
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this session opened it."""
        with self._lock:
            store, self._store = self._store, None
        if store is not None and self._owns_store:
            store.close()

    def __enter__(self) -> AgentckptSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self) -> Store:
        # Called under self._lock.
        if self._store is None:
            if self.url is None:
                raise ConfigurationError("this session's store was closed")
            # The items are the state: older steps are not needed, so they are pruned.
            self._store = Store.connect(self.url, policy=SnapshotPolicy(prune=True))
        return self._store

    async def _call(self, fn: Callable[[Store], T]) -> T:
        def locked() -> T:
            with self._lock:
                return fn(self._open())

        return await asyncio.to_thread(locked)

    # -- the Session protocol -----------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, only its last ``limit`` items.

        Without ``limit`` the session settings' limit applies. As in the SDK's SQLite
        session, ``limit=0`` returns nothing and a negative limit returns everything.
        """
        if limit is not None and type(limit) is not int:
            raise InvalidValueError("", f"limit must be an int or None, not {limit!r}")
        wanted = resolve_session_limit(limit, self.session_settings)
        items = await self._call(self._items)
        if wanted is None or wanted < 0:
            return items
        return items[-wanted:] if wanted else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items (each a JSON object, as the SDK's items are); durable when this
        returns. Anything else is an :class:`InvalidValueError` and nothing is written."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            # A dict would be read as its keys, a str as its characters: items, silently.
            raise InvalidValueError(
                "/items", f"items must be a list of items, not {type(items).__name__}"
            )
        added = [cast(Any, item) for item in items]
        for index, item in enumerate(added):
            if type(item) is not dict:
                raise InvalidValueError(
                    f"/items/{index}",
                    f"a session item must be a JSON object (a dict), not {type(item).__name__}",
                )
        if not added:
            return
        # Refuse what cannot round-trip exactly before anything is written.
        validate({"items": added}, path="")

        def append(old: list[Any]) -> list[Any]:
            # Redacted against the history as stored now, so each path names its item.
            clean, found = redact(added, self.redactors, path=f"/items/+{len(old)}")
            self._redacted = [_shifted(r, len(old)) for r in found]
            return old + list(clean)

        await self._call(lambda store: self._change(store, append))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, or None if the session is empty."""

        def pop(store: Store) -> TResponseInputItem | None:
            popped: list[Any] = []

            def drop_last(old: list[Any]) -> list[Any] | None:
                popped[:] = old[-1:]
                return old[:-1] if old else None

            self._change(store, drop_last)
            return cast(TResponseInputItem, popped[0]) if popped else None

        return await self._call(pop)

    async def clear_session(self) -> None:
        """Delete the session's history (its run and every step of it)."""
        await self._call(lambda store: store.delete_run(self.run_id))

    # -- the run behind it ---------------------------------------------------------------

    def _latest(self, store: Store) -> Any:
        # A read: ridden out under the store's outage policy.
        return ride_out(
            store.outage, lambda: store.latest(self.run_id), what=f"session {self.session_id!r}"
        )

    def _items(self, store: Store) -> list[Any]:
        try:
            checkpoint = self._latest(store)
        except RunNotFoundError:
            return []
        return list(checkpoint.state["items"]) if checkpoint is not None else []

    def _change(self, store: Store, change: Callable[[list[Any]], list[Any] | None]) -> None:
        """Commit ``change(items)`` over the items as stored now; None changes nothing.

        The commit names the step it read, so a writer in another process that got there
        first makes it fail; it is then re-read and re-applied.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                checkpoint = self._latest(store)
            except RunNotFoundError:
                store.create_run(
                    self.run_id,
                    kind=RUN_KIND,
                    metadata={"session_id": self.session_id}
                    if "\x00" not in self.session_id
                    else None,
                    exist_ok=True,
                )
                checkpoint = None
            old = list(checkpoint.state["items"]) if checkpoint is not None else []
            self._redacted = []
            new = change(old)
            if new is None:
                return
            expected = checkpoint.step if checkpoint is not None else None
            records = record_metadata((expected or 0) + 1, self._redacted) or None
            try:
                # Only the commit is repeated after an outage, never the change: the same
                # commit again is recognised if it landed, while re-applying the change
                # to a re-read history would add the items twice.
                commit = partial(
                    store.commit,
                    self.run_id,
                    {"items": new},
                    expected_head=expected,
                    metadata=records,
                )
                ride_out(store.outage, commit, what=f"session {self.session_id!r}")
                return
            except (StaleHeadError, RunNotFoundError):
                if attempt >= _ATTEMPTS:
                    raise
                time.sleep(lost_race_pause(attempt))
