"""The conversation state format, as typed objects that round-trip exactly.

A conversation's state is one JSON document (the format of seed 000, version 2)::

    {"version": 2,
     "conversation": [
        {"role": "user", "content": "What's the weather in Berlin?",
         "timestamp": "2025-03-15T10:00:00Z"},
        {"role": "assistant", "content": "Let me check the weather API.",
         "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Berlin"},
                         "result": {"temperature": 12}, "duration_ms": 340}],
         "timestamp": "2025-03-15T10:00:02Z"}],
     "agent_config": {"model": "llama-3-70b", "lora_adapters": ["weather-lora-v2"],
                      "temperature": 0.3, "max_tokens": 4096},
     "tool_registry": ["get_weather", "search_web"],
     "metadata": {"user_id": "user_abc123", "session_id": "sess_xyz789",
                  "input_tokens": 1523, "output_tokens": 421, "cost_estimate_usd": 0.023},
     "archive": {"messages": 120, "segments": 2}}

``archive`` appears once old turns were moved to the history table (see ``archive.py``).

Every object keeps the keys it does not know in ``extra`` and remembers the order of the
keys it was read with, so ``X.from_json(doc).to_json()`` is exactly ``doc`` (key order
included). A field that was absent stays absent unless code sets it; fields set in code
are written after the ones read, in the order of the example above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentckpt.conversation.fields import (
    NUMBER,
    FieldRecord,
    at,
    check_extra,
    emit,
    need,
    need_object,
    split,
)
from agentckpt.conversation.messages import BlobLoader, Message, ToolCall, read_messages
from agentckpt.errors import InvalidValueError

__all__ = [
    "CURRENT_VERSION",
    "AgentConfig",
    "ArchiveInfo",
    "BlobLoader",
    "ConversationMetadata",
    "ConversationState",
    "Message",
    "ToolCall",
    "tool_list",
    "tool_names",
]

CURRENT_VERSION = 2
"""The state format version this code writes (version 1 had no ``tool_registry``)."""


class AgentConfig(FieldRecord):
    """What shapes the model's behaviour: model, LoRA adapters, temperature, max tokens,
    and any other settings (kept in ``extra``). Recovery compares it with the runtime's."""

    __slots__ = ("_keys", "extra", "lora_adapters", "max_tokens", "model", "temperature")
    FIELDS = ("model", "lora_adapters", "temperature", "max_tokens")

    def __init__(
        self,
        model: str | None = None,
        *,
        lora_adapters: list[str] | None = None,
        temperature: int | float | None = None,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        check_extra(extra, self.FIELDS, "AgentConfig")
        self.model = model
        self.lora_adapters: list[str] | None = [] if lora_adapters is None else lora_adapters
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra: dict[str, Any] = dict(extra or {})
        self._keys: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Any, *, path: str = "") -> AgentConfig:
        """Read an agent config; :class:`InvalidValueError` names the path of a bad field."""
        doc = need_object(doc, path, "agent_config")
        need(doc.get("model"), (str,), at(path, "model"), "must be a string")
        need(doc.get("lora_adapters"), (list,), at(path, "lora_adapters"), "must be a list")
        need(doc.get("temperature"), NUMBER, at(path, "temperature"), "must be a number")
        need(doc.get("max_tokens"), (int,), at(path, "max_tokens"), "must be an integer")
        config = cls(
            doc.get("model"), temperature=doc.get("temperature"), max_tokens=doc.get("max_tokens")
        )
        config.lora_adapters = doc.get("lora_adapters")
        config._keys, config.extra = split(doc, cls.FIELDS)
        return config

    @classmethod
    def coerce(cls, value: AgentConfig | Mapping[str, Any]) -> AgentConfig:
        """An :class:`AgentConfig` from itself or from its JSON form (a mapping); anything
        else is an :class:`InvalidValueError` naming ``agent_config``."""
        if isinstance(value, AgentConfig):
            return value
        if not isinstance(value, Mapping):
            raise InvalidValueError(
                "", f"agent_config must be an AgentConfig or a mapping, not {type(value).__name__}"
            )
        return cls.from_json(dict(value))


class ConversationMetadata(FieldRecord):
    """Observability data (not needed to recover): user, session, tokens and cost."""

    __slots__ = (
        "_keys",
        "cost_estimate_usd",
        "extra",
        "input_tokens",
        "output_tokens",
        "session_id",
        "user_id",
    )
    FIELDS = ("user_id", "session_id", "input_tokens", "output_tokens", "cost_estimate_usd")

    def __init__(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_estimate_usd: int | float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        check_extra(extra, self.FIELDS, "ConversationMetadata")
        self.user_id = user_id
        self.session_id = session_id
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cost_estimate_usd = cost_estimate_usd
        self.extra: dict[str, Any] = dict(extra or {})
        self._keys: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Any, *, path: str = "") -> ConversationMetadata:
        """Read metadata; :class:`InvalidValueError` names the path of a bad field."""
        doc = need_object(doc, path, "metadata")
        for name, types, what in (
            ("user_id", (str,), "must be a string"),
            ("session_id", (str,), "must be a string"),
            ("input_tokens", (int,), "must be an integer"),
            ("output_tokens", (int,), "must be an integer"),
            ("cost_estimate_usd", NUMBER, "must be a number"),
        ):
            need(doc.get(name), types, at(path, name), what)
        meta = cls(**{name: doc.get(name) for name in cls.FIELDS})
        meta._keys, meta.extra = split(doc, cls.FIELDS)
        return meta

    @classmethod
    def coerce(cls, value: ConversationMetadata | Mapping[str, Any] | None) -> ConversationMetadata:
        """A :class:`ConversationMetadata` from itself, its JSON form or None."""
        if isinstance(value, ConversationMetadata):
            return value
        if value is not None and not isinstance(value, Mapping):
            raise InvalidValueError(
                "",
                f"metadata must be a ConversationMetadata or a mapping, not {type(value).__name__}",
            )
        return cls.from_json(dict(value or {}))

    def add_usage(
        self, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: int | float = 0
    ) -> None:
        """Add one model call's token counts and cost to the running totals."""
        if input_tokens:
            self.input_tokens = (self.input_tokens or 0) + input_tokens
        if output_tokens:
            self.output_tokens = (self.output_tokens or 0) + output_tokens
        if cost_usd:
            self.cost_estimate_usd = (self.cost_estimate_usd or 0) + cost_usd

    def rollup(self) -> dict[str, Any]:
        """The known fields that are set, for the run's queryable ``metadata`` column
        (strings with U+0000 left out: JSONB refuses them)."""
        out: dict[str, Any] = {}
        for name in self.FIELDS:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and "\x00" in value):
                out[name] = value
        return out


class ArchiveInfo:
    """How much of the conversation lives in the history table: the oldest ``messages``
    messages, in ``segments`` history rows (seq 0 .. segments-1)."""

    __slots__ = ("_keys", "extra", "messages", "segments")
    FIELDS = ("messages", "segments")

    def __init__(self, messages: int = 0, segments: int = 0) -> None:
        self.messages = messages
        self.segments = segments
        self.extra: dict[str, Any] = {}
        self._keys: tuple[str, ...] = self.FIELDS

    @classmethod
    def from_json(cls, doc: Any, *, path: str = "") -> ArchiveInfo:
        """Read archive bookkeeping; both counts must be integers."""
        doc = need_object(doc, path, "archive")
        for name in cls.FIELDS:
            if type(doc.get(name)) is not int or doc[name] < 0:
                raise InvalidValueError(at(path, name), "must be an integer >= 0")
        info = cls(doc["messages"], doc["segments"])
        info._keys, info.extra = split(doc, cls.FIELDS)
        return info

    def to_json(self) -> dict[str, Any]:
        """The bookkeeping as stored."""
        items = [("messages", self.messages), ("segments", self.segments)]
        return emit(self._keys, items, self.extra)

    def __repr__(self) -> str:
        return f"ArchiveInfo(messages={self.messages}, segments={self.segments})"


class ConversationState:
    """The whole state of one conversation at one turn (the hot part, when archived).

    ``conversation`` holds the messages still in the state; when old turns were moved to
    the history table, ``archive`` says how many came before them.
    """

    __slots__ = (
        "_keys",
        "agent_config",
        "archive",
        "conversation",
        "extra",
        "metadata",
        "tool_registry",
        "version",
    )
    FIELDS = (
        "version",
        "conversation",
        "agent_config",
        "tool_registry",
        "metadata",
        "archive",
    )

    def __init__(
        self,
        *,
        conversation: list[Message] | None = None,
        agent_config: AgentConfig | None = None,
        tool_registry: list[Any] | None = None,
        metadata: ConversationMetadata | None = None,
        version: int = CURRENT_VERSION,
        archive: ArchiveInfo | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        check_extra(extra, self.FIELDS, "ConversationState")
        self.version = version
        self.conversation: list[Message] = list(conversation or [])
        self.agent_config = agent_config if agent_config is not None else AgentConfig()
        self.tool_registry: list[Any] | None = [] if tool_registry is None else list(tool_registry)
        self.metadata = metadata if metadata is not None else ConversationMetadata()
        self.archive = archive
        self.extra: dict[str, Any] = dict(extra or {})
        self._keys: tuple[str, ...] = self.FIELDS[:5]

    @classmethod
    def from_json(cls, doc: Any) -> ConversationState:
        """Read a state (already upgraded to the current version by the caller)."""
        doc = need_object(doc, "", "a conversation state")
        version = doc.get("version", 1)
        if type(version) is not int:
            raise InvalidValueError("/version", "must be an integer")
        messages = doc.get("conversation", [])
        if type(messages) is not list:
            raise InvalidValueError("/conversation", "must be a list of messages")
        registry = doc.get("tool_registry")
        if registry is not None and type(registry) is not list:
            raise InvalidValueError("/tool_registry", "must be a list")
        state = cls(
            conversation=read_messages(messages, "/conversation"),
            version=version,
        )
        state._keys, state.extra = split(doc, cls.FIELDS)
        config = doc.get("agent_config", {})
        state.agent_config = AgentConfig.from_json(config, path="/agent_config")
        state.tool_registry = registry
        state.metadata = ConversationMetadata.from_json(doc.get("metadata", {}), path="/metadata")
        if "archive" in doc:
            state.archive = ArchiveInfo.from_json(doc["archive"], path="/archive")
        return state

    def to_json(self, *, conversation: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The state as stored. ``conversation`` may pass the messages already encoded
        (the conversation API caches completed turns instead of re-encoding them)."""
        keys = self._keys
        messages = (
            conversation if conversation is not None else [m.to_json() for m in self.conversation]
        )
        items: list[tuple[str, Any]] = []
        if self.version != 1 or "version" in keys:
            items.append(("version", self.version))
        if messages or "conversation" in keys:
            items.append(("conversation", messages))
        config = self.agent_config.to_json()
        if config or "agent_config" in keys:
            items.append(("agent_config", config))
        if self.tool_registry is not None or "tool_registry" in keys:
            items.append(("tool_registry", self.tool_registry))
        metadata = self.metadata.to_json()
        if metadata or "metadata" in keys:
            items.append(("metadata", metadata))
        if self.archive is not None:
            items.append(("archive", self.archive.to_json()))
        return emit(keys, items, self.extra)

    def copy(self, *, conversation: list[Message] | None = None) -> ConversationState:
        """An independent copy (config, registry, metadata and archive copied), with
        ``conversation`` as its messages if given, else the same message objects."""
        twin = ConversationState.from_json(self.to_json(conversation=[]))
        twin._keys = self._keys
        twin.conversation = list(self.conversation if conversation is None else conversation)
        return twin

    @property
    def archived_messages(self) -> int:
        """How many older messages live in the history table."""
        return self.archive.messages if self.archive is not None else 0

    def __repr__(self) -> str:
        return (
            f"ConversationState(version={self.version}, messages={len(self.conversation)}, "
            f"archived={self.archived_messages})"
        )


def tool_names(registry: Iterable[Any] | None) -> list[str]:
    """The names in a tool registry: entries are names, or objects with a ``name``."""
    names = []
    for entry in registry or ():
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names.append(entry["name"])
        else:
            names.append(repr(entry))
    return names


def tool_list(tools: Iterable[Any]) -> list[Any]:
    """The tool registry as a list; anything but an iterable of tools (a str is one name,
    not a list of letters) is an :class:`InvalidValueError` naming ``tools``."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise InvalidValueError(
            "", f"tools must be a list of tool names or objects, not {type(tools).__name__}"
        )
    return list(tools)
