"""LangGraph call arguments to step index requests, and index entries to LangGraph tuples.

Pure (no I/O): the saver's sync and async methods share these, so each of its methods is
only the call to the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.base import (
    PendingWrite as LangGraphWrite,
)
from langgraph.checkpoint.serde.types import TASKS

from agentckpt.errors import ConfigurationError, DeltaChannelPruneError, PruneStrategyError
from agentckpt.integrations.langgraph.codec import CheckpointCodec
from agentckpt.integrations.langgraph.records import (
    Entry,
    IndexedPut,
    IndexRow,
    ListQuery,
    PendingWrite,
    check_text,
)
from agentckpt.integrations.langgraph.versions import next_version

__all__ = [
    "DeltaChannelPruneError",
    "DeltaWalk",
    "PruneStrategyError",
    "checkpoint_tuple",
    "list_query",
    "prune_threads",
    "put_request",
    "refuse_delta_threads",
    "run_ids",
    "target",
    "thread",
    "thread_config",
    "writes_request",
]

# Metadata keys that mark a thread using a DeltaChannel, whose value is rebuilt from older
# checkpoints' writes: pruning those away would silently empty the channel.
_DELTA_KEYS = ("counters_since_delta_snapshot", "delta_writes_versioned")


def refuse_delta_threads(codec: CheckpointCodec, rows: Sequence[IndexRow]) -> None:
    """Raise :class:`DeltaChannelPruneError` if any of these checkpoints uses a DeltaChannel."""
    using = sorted(
        {
            row.thread_id
            for row in rows
            if any(key in codec.metadata(row.metadata) for key in _DELTA_KEYS)
        }
    )
    if using:
        raise DeltaChannelPruneError(
            "keep_latest cannot prune threads that use a DeltaChannel (their latest value "
            f"is rebuilt from older checkpoints); nothing was pruned: {', '.join(using)}"
        )


def thread(thread_id: object) -> str:
    """A thread id as stored (LangGraph allows any value; it is kept as its text)."""
    return check_text(str(thread_id), "thread_id")


def target(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id or None)`` named by a config."""
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise ConfigurationError(
            "the config has no configurable.thread_id; pass "
            '{"configurable": {"thread_id": ...}} to the graph'
        )
    namespace = check_text(configurable.get("checkpoint_ns", ""), "checkpoint_ns")
    # An empty id names no checkpoint: the thread's latest, and no parent for a put, as in
    # LangGraph's own savers (which test it with ``if checkpoint_id:``).
    checkpoint_id = get_checkpoint_id(config) or None
    if checkpoint_id is not None:
        checkpoint_id = check_text(checkpoint_id, "checkpoint_id")
    return thread(configurable["thread_id"]), namespace, checkpoint_id


def thread_config(thread_id: str, namespace: str, checkpoint_id: str) -> RunnableConfig:
    """The config that names one checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": namespace,
            "checkpoint_id": checkpoint_id,
        }
    }


def list_query(
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> ListQuery:
    """What ``list(config, filter=, before=, limit=)`` asks for."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = thread(configurable["thread_id"]) if "thread_id" in configurable else None
    namespace = configurable.get("checkpoint_ns")
    return ListQuery(
        thread_id=thread_id,
        namespace=None if namespace is None else check_text(namespace, "checkpoint_ns"),
        checkpoint_id=configurable.get("checkpoint_id") or None,
        before=get_checkpoint_id(before) if before else None,
        limit=limit,
        filter=filter,
    )


def put_request(
    codec: CheckpointCodec,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
) -> IndexedPut:
    """What ``put`` stores: the encoded checkpoint, its parent, metadata and blobs."""
    thread_id, namespace, parent_id = target(config)
    checkpoint_id = check_text(checkpoint["id"], "checkpoint id")
    state, blobs = codec.encode_state(cast(dict[str, Any], checkpoint))
    # As InMemorySaver and SqliteSaver store it: every key the caller gave (including a
    # "writes" key, which PostgresSaver alone drops), plus the config's run keys.
    meta = get_checkpoint_metadata(config, metadata)
    invocation = meta.get("run_id")
    return IndexedPut(
        thread_id=thread_id,
        namespace=namespace,
        checkpoint_id=checkpoint_id,
        parent_id=parent_id,
        state=state,
        metadata=codec.encode_metadata(cast(dict[str, Any], meta)),
        invocation_id=None if invocation is None else check_text(str(invocation), "run_id"),
        blobs=blobs,
    )


def writes_request(
    codec: CheckpointCodec,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> tuple[str, str, str, list[PendingWrite], bool]:
    """``(thread, namespace, checkpoint id, writes, replace)`` for ``put_writes``."""
    thread_id, namespace, checkpoint_id = target(config)
    if checkpoint_id is None:
        raise ConfigurationError("put_writes needs configurable.checkpoint_id in the config")
    task_id = check_text(task_id, "task_id")
    task_path = check_text(task_path, "task_path")
    rows = [
        codec.encode_write(
            task_id,
            task_path,
            WRITES_IDX_MAP.get(channel, idx),
            check_text(channel, "channel"),
            value,
        )
        for idx, (channel, value) in enumerate(writes)
    ]
    # As LangGraph's savers do: special writes (error, interrupt, ...) replace, others stay.
    replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
    return thread_id, namespace, checkpoint_id, rows, replace


def run_ids(run_ids: Sequence[str]) -> list[str]:
    """The LangGraph run ids given to ``delete_for_runs``, checked."""
    if isinstance(run_ids, str):
        raise TypeError("run_ids must be a sequence of run ids, not a str")
    return [check_text(str(run_id), "run_id") for run_id in run_ids]


def prune_threads(thread_ids: Sequence[str], strategy: str) -> list[str]:
    """The thread ids given to ``prune``, checked with the strategy."""
    if isinstance(thread_ids, str):
        raise TypeError("thread_ids must be a sequence of thread ids, not a str")
    if strategy not in ("keep_latest", "delete"):
        raise PruneStrategyError(
            f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
        )
    return [thread(thread_id) for thread_id in thread_ids]


def checkpoint_tuple(entry: Entry, codec: CheckpointCodec) -> CheckpointTuple:
    """The LangGraph tuple of a loaded checkpoint."""
    row = entry.row
    parent = (
        None
        if row.parent_id is None
        else thread_config(row.thread_id, row.namespace, row.parent_id)
    )
    checkpoint = codec.decode_checkpoint(entry.state, entry.blobs)
    if entry.sends and checkpoint.get("v", 4) < 4:
        _migrate_sends(checkpoint, [codec.decode_write(w) for w in entry.sends])
    return CheckpointTuple(
        config=thread_config(row.thread_id, row.namespace, row.checkpoint_id),
        checkpoint=cast(Checkpoint, checkpoint),
        metadata=cast(CheckpointMetadata, codec.metadata(row.metadata)),
        parent_config=parent,
        pending_writes=[(w.task_id, w.channel, codec.decode_write(w)) for w in entry.writes],
    )


def _migrate_sends(checkpoint: dict[str, Any], sends: list[Any]) -> None:
    """Give a pre-v4 checkpoint its parent's sends as the tasks channel's value, as
    LangGraph's ``PostgresSaver`` does on every read (older LangGraph versions kept them
    as the parent's pending writes only): the value, and the greatest channel version
    (the first version when there is none)."""
    versions = checkpoint.setdefault("channel_versions", {})
    version = max(versions.values()) if versions else next_version(None)
    checkpoint.setdefault("channel_values", {})[TASKS] = sends
    versions[TASKS] = version


class DeltaWalk:
    """``get_delta_channel_history``'s walk up a checkpoint's parent chain, without I/O.

    As LangGraph's ``BaseCheckpointSaver`` does it (each ancestor's pending writes for the
    channels, until an ancestor holds a value for each, its seed), but it stops at a
    checkpoint it has seen: putting a checkpoint id again under one of its descendants
    makes the parent chain a loop, which the base class would follow for ever.

    Example::

        walk = DeltaWalk(channels)
        cursor = walk.start(saver.get_tuple(config))
        while cursor is not None:
            cursor = walk.visit(saver.get_tuple(cursor))
        history = walk.result()
    """

    def __init__(self, channels: Sequence[str]) -> None:
        self.channels = list(channels)
        self._remaining = set(self.channels)
        self._writes: dict[str, list[LangGraphWrite]] = {c: [] for c in self.channels}
        self._seeds: dict[str, Any] = {}
        self._seen: set[str] = set()

    def start(self, target: CheckpointTuple | None) -> RunnableConfig | None:
        """The first ancestor to read, given the target checkpoint (None: none)."""
        if target is None:
            return None
        self._seen.add(str(target.config["configurable"]["checkpoint_id"]))
        return self._next(target.parent_config)

    def visit(self, ancestor: CheckpointTuple | None) -> RunnableConfig | None:
        """Take one ancestor's writes and seeds; the next ancestor to read, or None."""
        if ancestor is None:
            return None
        for write in reversed(ancestor.pending_writes or []):
            if write[1] in self._remaining:
                self._writes[write[1]].append(write)
        values = ancestor.checkpoint["channel_values"]
        for channel in [c for c in self.channels if c in self._remaining and c in values]:
            self._seeds[channel] = values[channel]
            self._remaining.discard(channel)
        return self._next(ancestor.parent_config)

    def _next(self, parent: RunnableConfig | None) -> RunnableConfig | None:
        if parent is None or not self._remaining:
            return None
        checkpoint_id = str(parent["configurable"]["checkpoint_id"])
        if checkpoint_id in self._seen:
            return None  # the chain loops back: every ancestor has been read
        self._seen.add(checkpoint_id)
        return parent

    def result(self) -> dict[str, DeltaChannelHistory]:
        """Per channel: its writes oldest first, and its seed if an ancestor held one."""
        history: dict[str, DeltaChannelHistory] = {}
        for channel in self.channels:
            entry: DeltaChannelHistory = {"writes": list(reversed(self._writes[channel]))}
            if channel in self._seeds:
                entry["seed"] = self._seeds[channel]
            history[channel] = entry
        return history
