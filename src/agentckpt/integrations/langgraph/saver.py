"""A LangGraph checkpointer backed by agentckpt, on SQLite or PostgreSQL.

Install with ``pip install 'agentckpt[langgraph]'``. Every checkpoint of a thread (and
namespace) is a step of one agentckpt run, stored as a delta against the previous one, so
a conversation that grows by one message costs about one message per checkpoint, not the
whole history. Large values go to the blob table once. Pending writes, the checkpoint
index and its metadata live beside the runs (tables ``step_index``, ``step_writes``,
``run_threads``).

Example::

    from agentckpt.integrations.langgraph.saver import AgentckptSaver

    with AgentckptSaver.from_url("sqlite:///graph.db") as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}})

Sync methods use a :class:`~agentckpt.Store`, async methods an
:class:`~agentckpt.AsyncStore`; both are opened from the same URL on first use. The async
store belongs to the event loop it was opened on (as with LangGraph's own async savers).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from os import PathLike
from types import TracebackType
from typing import Any, cast
from uuid import UUID

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import ConfigurationError, DeltaChannelPruneError, PruneStrategyError
from agentckpt.integrations.langgraph import calls
from agentckpt.integrations.langgraph.codec import DEFAULT_BLOB_THRESHOLD, CheckpointCodec
from agentckpt.integrations.langgraph.conn_strings import store_url
from agentckpt.integrations.langgraph.records import check_text, thread_run_id
from agentckpt.integrations.langgraph.redaction import METADATA_KEY, redact_channels, redact_writes
from agentckpt.integrations.langgraph.step_index import StepIndex
from agentckpt.integrations.langgraph.step_index_async import AsyncStepIndex
from agentckpt.integrations.langgraph.versions import Version, next_version
from agentckpt.ops import kinds
from agentckpt.redaction import Redactor
from agentckpt.store.store import Store
from agentckpt.store.store_async import AsyncStore
from agentckpt.tenancy import DEFAULT_TENANT

__all__ = [
    "DEFAULT_POLICY",
    "RUN_KIND",
    "AgentckptSaver",
    "DeltaChannelPruneError",
    "PruneStrategyError",
]

RUN_KIND = kinds.LANGGRAPH
"""The ``kind`` of the runs that store LangGraph threads."""

DEFAULT_POLICY = SnapshotPolicy(interval=100, stretch=1, prune=False)
"""Every checkpoint stays listable (``prune=False``); a snapshot every 100 checkpoints bounds
what a read replays, and the default chain byte budget bounds it in bytes. Not stretched:
LangGraph reads the latest checkpoint before every step, and 100 is already five times the
store's interval."""


class AgentckptSaver(BaseCheckpointSaver[Any]):
    """LangGraph checkpointer storing checkpoints as agentckpt runs and steps.

    Channel versions are ints (``1, 2, ...``) for threads it starts; a thread written by
    one of LangGraph's own savers keeps its string versions (see :meth:`get_next_version`).

    Args:
        url: ``sqlite:///path.db`` or ``postgresql://...`` (see :meth:`Store.connect`).
        store: an open :class:`Store` for the sync methods (instead of ``url``); its
            snapshot policy must have ``prune=False``.
        astore: an open :class:`AsyncStore` for the async methods (instead of ``url``).
        serde: LangGraph serializer for values that are not JSON (default: LangGraph's).
        policy: snapshot policy of the stores opened from ``url``.
        blob_threshold: values and list items larger than this many bytes go to the
            blob table.
        inline_json: keep JSON channel values as JSON (default: True, False with an
            :class:`EncryptedSerializer` so that nothing is stored in clear).
        redactors: applied to messages (content, tool call arguments, tool results) and
            JSON strings of channel values and pending writes before they are stored
            (:mod:`agentckpt.redaction`); each checkpoint's metadata records what was
            removed under ``"redactions"``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        store: Store | None = None,
        astore: AsyncStore | None = None,
        serde: SerializerProtocol | None = None,
        policy: SnapshotPolicy = DEFAULT_POLICY,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        inline_json: bool | None = None,
        redactors: Sequence[Redactor] = (),
    ) -> None:
        super().__init__(serde=serde)
        self.redactors: tuple[Redactor, ...] = tuple(redactors)
        if url is None and store is None and astore is None:
            raise ConfigurationError("AgentckptSaver needs a url, a store or an astore")
        for given in (store, astore):
            if given is not None and given.policy.prune:
                raise ConfigurationError(
                    "the store's SnapshotPolicy has prune=True, which would delete checkpoints "
                    "LangGraph can still list; use SnapshotPolicy(prune=False)"
                )
        if policy.prune:
            raise ConfigurationError("AgentckptSaver needs a SnapshotPolicy with prune=False")
        self.url = url
        self.policy = policy
        self.blob_threshold = blob_threshold
        self.inline_json = (
            not isinstance(self.serde, EncryptedSerializer) if inline_json is None else inline_json
        )
        self._index = StepIndex(store, kind=RUN_KIND) if store is not None else None
        self._aindex = AsyncStepIndex(astore, kind=RUN_KIND) if astore is not None else None
        self._owns_store = store is None
        self._owns_astore = astore is None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[AsyncStore] | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_url(cls, url: str, **options: Any) -> Iterator[AgentckptSaver]:
        """A saver on ``url`` with its sync store open (schema migrated); closed after."""
        saver = cls(url, **options)
        try:
            saver.setup()
            yield saver
        finally:
            saver.close()

    @classmethod
    @asynccontextmanager
    async def afrom_url(cls, url: str, **options: Any) -> AsyncIterator[AgentckptSaver]:
        """A saver on ``url`` with its async store open on this event loop; closed after."""
        saver = cls(url, **options)
        try:
            await saver.asetup()
            yield saver
        finally:
            await saver.aclose()

    @classmethod
    def from_conn_string(cls, conn_string: str | PathLike[str], **options: Any) -> _SaverOpening:
        """A saver on a LangGraph saver's connection string, for ``with`` or ``async with``.

        Takes what ``PostgresSaver.from_conn_string`` / ``AsyncPostgresSaver`` take (a
        ``postgresql://`` URL or libpq ``key=value`` string) and what ``SqliteSaver`` takes
        (a file path or ``:memory:``). ``with`` opens the sync store, ``async with`` the
        async one on the running loop, as :meth:`from_url` and :meth:`afrom_url` do.
        """
        return _SaverOpening(cls, store_url(conn_string), options)

    def setup(self) -> _Setup:
        """Open the sync store now (and migrate the schema) instead of on first use.

        ``await saver.setup()``, as LangGraph's async savers are set up, opens the async
        store on the running loop as well (:meth:`asetup`); without a ``url`` or ``store``
        there is no sync store, and only the awaited part does anything.
        """
        if self.url is not None or self._index is not None:
            self._sync()
        return _Setup(self)

    async def asetup(self) -> None:
        """Open the async store on the running loop now instead of on first use."""
        await self._async()

    def close(self) -> None:
        """Close the sync store if this saver opened it."""
        with self._lock:
            index, self._index = self._index, None
        if index is not None and self._owns_store:
            index.store.close()

    async def aclose(self) -> None:
        """Close both stores this saver opened (the async one on its own loop)."""
        index, self._aindex = self._aindex, None
        self._opening = self._aloop = None  # a later call opens a new store
        if index is not None and self._owns_astore:
            await index.store.close()
        self.close()

    def __enter__(self) -> AgentckptSaver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> AgentckptSaver:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def store(self) -> Store:
        """The sync store (opened on first use), to inspect the runs behind the threads."""
        return self._sync().store

    @staticmethod
    def run_id(thread_id: str, checkpoint_ns: str = "", tenant: str = DEFAULT_TENANT) -> UUID:
        """The id of the agentckpt run that stores a thread's checkpoints in a namespace
        (for ``tenant``, the tenant of the saver's store)."""
        return thread_run_id(
            calls.thread(thread_id), check_text(checkpoint_ns, "checkpoint_ns"), tenant
        )

    def _sync(self) -> StepIndex:
        with self._lock:
            if self._index is None:
                if self.url is None:
                    raise ConfigurationError(
                        "this saver has no sync store (it was closed, or given only an "
                        "AsyncStore); pass store= or url="
                    )
                self._index = StepIndex(Store.connect(self.url, policy=self.policy), kind=RUN_KIND)
            return self._index

    async def _async(self) -> AsyncStepIndex:
        loop = asyncio.get_running_loop()
        if self._aindex is not None:
            if self._aloop is not None and self._aloop is not loop:
                raise ConfigurationError(
                    "this saver's async store was opened on another event loop; use one "
                    "saver per event loop (its sync methods work from anywhere)"
                )
            return self._aindex
        if self.url is None:
            raise ConfigurationError(
                "this saver has no async store (it was closed, or given only a sync "
                "Store); pass astore= or url="
            )
        if self._opening is None or self._opening.get_loop() is not loop:
            # One connect for all the coroutines that need the store at once.
            self._opening = loop.create_task(AsyncStore.connect(self.url, policy=self.policy))
        try:
            store = await asyncio.shield(self._opening)
        except BaseException:
            if self._opening.done():
                self._opening = None  # a failed connect is retried by the next call
            raise
        if self._aindex is None:
            self._aindex, self._aloop = AsyncStepIndex(store, kind=RUN_KIND), loop
        return self._aindex

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Each channel's writes up the parent chain of ``config``'s checkpoint and its seed
        (LangGraph's ``DeltaChannel`` history); stops if the chain loops back."""
        if not channels:
            return {}
        walk = calls.DeltaWalk(channels)
        cursor = walk.start(self.get_tuple(config))
        while cursor is not None:
            cursor = walk.visit(self.get_tuple(cursor))
        return walk.result()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        if not channels:
            return {}
        walk = calls.DeltaWalk(channels)
        cursor = walk.start(await self.aget_tuple(config))
        while cursor is not None:
            cursor = walk.visit(await self.aget_tuple(cursor))
        return walk.result()

    def get_next_version(self, current: Version | None, channel: None = None) -> Version:
        """The next version of a channel, in the format the thread already uses.

        ``None`` (a new channel) gives ``1``; an int (agentckpt's format) the next int; a
        string (LangGraph's savers' format) the next integer part, zero-padded to 32
        digits, with a new random fraction, as those savers continue it.
        """
        return next_version(current)

    def _redacted(
        self, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[Checkpoint, CheckpointMetadata]:
        """The checkpoint through the redactors, its metadata with what they removed."""
        clean, found = redact_channels(cast(dict[str, Any], checkpoint), self.redactors)
        if not found:
            return checkpoint, metadata
        records = [r.to_json() for r in dict.fromkeys(found)]
        meta = cast(CheckpointMetadata, {**metadata, METADATA_KEY: records})
        return cast(Checkpoint, clean), meta

    def _codec(self) -> CheckpointCodec:
        # Built per call: with_allowlist() clones the saver with another serde.
        return CheckpointCodec(
            self.serde, inline_json=self.inline_json, blob_threshold=self.blob_threshold
        )

    # -- sync API ----------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (the thread's latest without an id)."""
        thread_id, namespace, checkpoint_id = calls.target(config)
        codec = self._codec()
        entry = self._sync().get(thread_id, namespace, checkpoint_id, codec)
        return None if entry is None else calls.checkpoint_tuple(entry, codec)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread (and namespace), metadata, id and count."""
        codec = self._codec()
        for entry in self._sync().entries(calls.list_query(config, filter, before, limit), codec):
            yield calls.checkpoint_tuple(entry, codec)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint; durable when this returns."""
        checkpoint, metadata = self._redacted(checkpoint, metadata)
        put = calls.put_request(self._codec(), config, checkpoint, metadata)
        self._sync().put(put)
        return calls.thread_config(put.thread_id, put.namespace, put.checkpoint_id)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint in ``config``."""
        thread_id, namespace, checkpoint_id, rows, replace = calls.writes_request(
            self._codec(), config, redact_writes(writes, self.redactors), task_id, task_path
        )
        self._sync().put_writes(thread_id, namespace, checkpoint_id, rows, replace=replace)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread."""
        self._sync().delete_thread(calls.thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints and writes that these LangGraph runs wrote."""
        self._sync().delete_invocations(calls.run_ids(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread into another."""
        self._sync().copy_thread(calls.thread(source_thread_id), calls.thread(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``), or ``delete`` all."""
        threads = calls.prune_threads(thread_ids, strategy)
        index = self._sync()
        if strategy == "delete":
            for thread_id in threads:
                index.delete_thread(thread_id)
        else:
            index.keep_latest(threads, partial(calls.refuse_delta_threads, self._codec()))

    # -- async API ---------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        thread_id, namespace, checkpoint_id = calls.target(config)
        codec = self._codec()
        entry = await (await self._async()).get(thread_id, namespace, checkpoint_id, codec)
        return None if entry is None else calls.checkpoint_tuple(entry, codec)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        codec = self._codec()
        index = await self._async()
        async for entry in index.entries(calls.list_query(config, filter, before, limit), codec):
            yield calls.checkpoint_tuple(entry, codec)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        checkpoint, metadata = self._redacted(checkpoint, metadata)
        put = calls.put_request(self._codec(), config, checkpoint, metadata)
        await (await self._async()).put(put)
        return calls.thread_config(put.thread_id, put.namespace, put.checkpoint_id)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        thread_id, namespace, checkpoint_id, rows, replace = calls.writes_request(
            self._codec(), config, redact_writes(writes, self.redactors), task_id, task_path
        )
        index = await self._async()
        await index.put_writes(thread_id, namespace, checkpoint_id, rows, replace=replace)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await (await self._async()).delete_thread(calls.thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await (await self._async()).delete_invocations(calls.run_ids(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await (await self._async()).copy_thread(
            calls.thread(source_thread_id), calls.thread(target_thread_id)
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        threads = calls.prune_threads(thread_ids, strategy)
        index = await self._async()
        if strategy == "delete":
            for thread_id in threads:
                await index.delete_thread(thread_id)
        else:
            await index.keep_latest(threads, partial(calls.refuse_delta_threads, self._codec()))


class _Setup:
    """What :meth:`AgentckptSaver.setup` returns: nothing to use, or ``await`` it to open
    the async store too, as code written for LangGraph's async savers does."""

    __slots__ = ("_saver",)

    def __init__(self, saver: AgentckptSaver) -> None:
        self._saver = saver

    def __await__(self) -> Generator[Any, None, None]:
        return self._saver.asetup().__await__()


class _SaverOpening:
    """What :meth:`AgentckptSaver.from_conn_string` returns: a saver for ``with`` (sync
    store) or ``async with`` (async store), closed on exit."""

    def __init__(self, cls: type[AgentckptSaver], url: str, options: dict[str, Any]) -> None:
        self._cls = cls
        self.url = url
        self._options = options
        self._saver: AgentckptSaver | None = None

    def _open(self) -> AgentckptSaver:
        if self._saver is not None:
            raise ConfigurationError("this from_conn_string(...) was entered already")
        self._saver = self._cls(self.url, **self._options)
        return self._saver

    def __enter__(self) -> AgentckptSaver:
        saver = self._open()
        try:
            saver.setup()
        except BaseException:
            saver.close()
            raise
        return saver

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saver is not None:
            self._saver.close()

    async def __aenter__(self) -> AgentckptSaver:
        saver = self._open()
        try:
            await saver.asetup()
        except BaseException:
            await saver.aclose()
            raise
        return saver

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saver is not None:
            await self._saver.aclose()
