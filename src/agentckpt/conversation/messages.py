"""Messages and tool calls of the conversation format; no I/O.

A message has a ``role``, ``content``, a ``timestamp`` and, for an assistant, the
``tool_calls`` it made; each tool call has ``tool_name``, ``arguments``, ``result`` and
``duration_ms``. A large result is kept out of the state as a blob reference
(``{"$blob": "sha256:...", "uri": ..., "size": ..., "codec": "zstd"}``) and loaded lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentckpt._core.blobs import BlobRef, is_ref
from agentckpt._core.codec import decode, same
from agentckpt.conversation.fields import NUMBER, at, check_extra, emit, need, need_object, split
from agentckpt.errors import InvalidValueError, ResultNotLoadedError

__all__ = ["BlobLoader", "Message", "ToolCall", "read_messages"]

BlobLoader = Callable[[BlobRef], bytes]
"""Fetches a blob's verified bytes (the sync store's ``get_blob`` bound to a run)."""

_NO_RESULT: Any = object()


class ToolCall:
    """One tool call inside an assistant message.

    ``result`` is absent while the call runs (``has_result`` is False: a *dangling* call
    if the process dies then). A large result is stored as a compressed blob and the
    state keeps a reference (``result_ref``); reading ``result`` loads it on first
    access (sync API) and caches it. Its bytes are checked against their sha256, so a
    damaged blob raises :class:`~agentckpt.errors.CorruptDataError`.
    """

    __slots__ = (
        "_has_result",
        "_is_blob",
        "_keys",
        "_loaded",
        "_loader",
        "_stored",
        "_value",
        "arguments",
        "duration_ms",
        "extra",
        "tool_name",
    )
    FIELDS = ("tool_name", "arguments", "result", "duration_ms")

    def __init__(
        self,
        tool_name: str,
        arguments: Any = None,
        *,
        result: Any = _NO_RESULT,
        duration_ms: int | float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        check_extra(extra, self.FIELDS, "ToolCall")
        self.tool_name = tool_name
        self.arguments: Any = {} if arguments is None else arguments
        self.duration_ms = duration_ms
        self.extra: dict[str, Any] = dict(extra or {})
        self._keys: tuple[str, ...] = ("tool_name", "arguments")
        self._has_result = False
        self._is_blob = False
        self._stored: Any = None
        self._value: Any = None
        self._loaded = True
        self._loader: BlobLoader | None = None
        if result is not _NO_RESULT:
            self.set_result(result)

    @classmethod
    def from_json(cls, doc: Any, *, path: str = "") -> ToolCall:
        """Read a tool call; :class:`InvalidValueError` names the path of a bad field."""
        if cls is ToolCall:
            call = _fast_call(doc)
            if call is not None:
                return call
        return cls._from_json_checked(doc, path)

    @classmethod
    def _from_json_checked(cls, doc: Any, path: str) -> ToolCall:
        """The full reader: every check, each error naming its path."""
        doc = need_object(doc, path, "a tool call")
        name = doc.get("tool_name")
        if type(name) is not str:
            raise InvalidValueError(at(path, "tool_name"), "a tool call needs a string name")
        need(doc.get("duration_ms"), NUMBER, at(path, "duration_ms"), "must be a number")
        call = cls(name)
        call._keys, call.extra = split(doc, cls.FIELDS)
        call.arguments = doc.get("arguments")
        call.duration_ms = doc.get("duration_ms")
        if "result" in doc:
            stored = doc["result"]
            # Only the conversation API writes references here, and it stores even a
            # result that merely looks like one as a blob: a reference is a reference.
            call._has_result, call._stored, call._is_blob = True, stored, is_ref(stored)
            call._loaded = not call._is_blob
            call._value = None if call._is_blob else stored
        return call

    def to_json(self) -> dict[str, Any]:
        """The call as stored: a blob-backed result appears as its reference."""
        items: list[tuple[str, Any]] = [("tool_name", self.tool_name)]
        if self.arguments is not None or "arguments" in self._keys:
            items.append(("arguments", self.arguments))
        if self._has_result:
            items.append(("result", self._stored))
        if self.duration_ms is not None or "duration_ms" in self._keys:
            items.append(("duration_ms", self.duration_ms))
        return emit(self._keys, items, self.extra)

    @property
    def has_result(self) -> bool:
        """False while the call has no result (it runs, or it was cut off: dangling)."""
        return self._has_result

    @property
    def result(self) -> Any:
        """The tool's result (None if it has none yet); blob results load on first access."""
        if not self._has_result:
            return None
        if not self._loaded:
            ref = BlobRef.from_json(self._stored)
            if self._loader is None:
                raise ResultNotLoadedError(
                    f"tool call {self.tool_name!r}: its result is blob {ref.digest} "
                    f"({ref.size} bytes); load it with load_result() first"
                )
            self._value = decode(self._loader(ref))
            self._loaded = True
        return self._value

    @property
    def result_ref(self) -> BlobRef | None:
        """The blob reference of a result stored out of the state, else None."""
        return BlobRef.from_json(self._stored) if self._is_blob else None

    @property
    def is_loaded(self) -> bool:
        """True unless the result is a blob that has not been fetched yet."""
        return self._loaded

    def set_result(self, value: Any, *, duration_ms: int | float | None = None) -> None:
        """Record the tool's result (kept inline until the conversation offloads it)."""
        self._has_result, self._stored, self._value, self._loaded = True, value, value, True
        self._is_blob = False
        if duration_ms is not None:
            self.duration_ms = duration_ms

    def attach_blob(self, ref: BlobRef) -> None:
        """Store the result as ``ref`` from now on; the loaded value stays cached."""
        if not self._has_result:
            raise ValueError(f"tool call {self.tool_name!r} has no result to move to a blob")
        self._stored = ref.to_json()
        self._is_blob = True

    def cache_result(self, data: bytes) -> Any:
        """Decode the blob bytes of the result into the cache; return the value."""
        self._value = decode(data)
        self._loaded = True
        return self._value

    def attach_loader(self, loader: BlobLoader | None) -> None:
        """Let ``result`` fetch a blob-backed value on first access."""
        self._loader = loader

    def copy(self) -> ToolCall:
        """An independent copy sharing the (immutable once stored) JSON values."""
        # Every slot is set below: __init__'s checks and defaults would only be overwritten.
        twin = ToolCall.__new__(ToolCall)
        for name in self.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.extra = dict(self.extra)
        return twin

    def restore(self, saved: ToolCall) -> None:
        """Put back every field of ``saved``, a :meth:`copy` of this call taken earlier
        (the conversation API undoes a refused write with it)."""
        for name in self.__slots__:
            setattr(self, name, getattr(saved, name))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolCall):
            return NotImplemented
        return same(self.to_json(), other.to_json())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = "no result" if not self._has_result else ("blob" if self.result_ref else "inline")
        return f"ToolCall({self.tool_name!r}, {state})"


class Message:
    """One message: ``role`` (user, assistant, system, tool), content, timestamp, and for
    an assistant, the ``tool_calls`` it made (None when the key is absent)."""

    __slots__ = ("_keys", "content", "extra", "role", "timestamp", "tool_calls")
    FIELDS = ("role", "content", "tool_calls", "timestamp")

    def __init__(
        self,
        role: str,
        content: Any = None,
        *,
        timestamp: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        check_extra(extra, self.FIELDS, "Message")
        self.role = role
        self.content: Any = content
        self.timestamp = timestamp
        self.tool_calls = tool_calls
        self.extra: dict[str, Any] = dict(extra or {})
        self._keys: tuple[str, ...] = ("role", "content")

    @classmethod
    def from_json(cls, doc: Any, *, path: str = "") -> Message:
        """Read a message; :class:`InvalidValueError` names the path of a bad field."""
        if cls is Message:
            message = _fast_message(doc)
            if message is not None:
                return message
        return cls._from_json_checked(doc, path)

    @classmethod
    def _from_json_checked(cls, doc: Any, path: str) -> Message:
        """The full reader: every check, each error naming its path."""
        doc = need_object(doc, path, "a message")
        role = doc.get("role")
        if type(role) is not str:
            raise InvalidValueError(at(path, "role"), "a message needs a string role")
        need(doc.get("timestamp"), (str,), at(path, "timestamp"), "must be a string")
        calls = doc.get("tool_calls")
        if calls is not None and type(calls) is not list:
            raise InvalidValueError(at(path, "tool_calls"), "must be a list of tool calls")
        message = cls(role, doc.get("content"), timestamp=doc.get("timestamp"))
        message._keys, message.extra = split(doc, cls.FIELDS)
        if calls is not None:
            where = at(path, "tool_calls")
            message.tool_calls = [
                ToolCall.from_json(c, path=at(where, i)) for i, c in enumerate(calls)
            ]
        return message

    def to_json(self) -> dict[str, Any]:
        """The message as stored."""
        items: list[tuple[str, Any]] = [("role", self.role)]
        if self.content is not None or "content" in self._keys:
            items.append(("content", self.content))
        if self.tool_calls is not None or "tool_calls" in self._keys:
            calls = None if self.tool_calls is None else [c.to_json() for c in self.tool_calls]
            items.append(("tool_calls", calls))
        if self.timestamp is not None or "timestamp" in self._keys:
            items.append(("timestamp", self.timestamp))
        return emit(self._keys, items, self.extra)

    def copy(self) -> Message:
        """An independent copy (tool calls copied, JSON values shared)."""
        twin = Message(self.role, self.content, timestamp=self.timestamp, extra=self.extra)
        twin._keys = self._keys
        if self.tool_calls is not None:
            twin.tool_calls = [c.copy() for c in self.tool_calls]
        return twin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return same(self.to_json(), other.to_json())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        text = self.content if isinstance(self.content, str) else repr(self.content)
        calls = f", {len(self.tool_calls)} tool call(s)" if self.tool_calls else ""
        return f"Message({self.role!r}, {text[:40]!r}{calls})"


# -- the fast readers ----------------------------------------------------------------
#
# A resume builds every hot message of a conversation, and the full readers above pay
# for their generality on each one: a JSON Pointer string per checked field, extras
# split through sets, __init__'s checks of arguments that cannot be wrong here. The
# readers below accept only the shape the conversation API itself writes (exact JSON
# types, as a decoded document has them) and build the very same objects; for anything
# else they return None and the full reader runs, so every error (and its path) is the
# full reader's. tests/unit/conversation/test_fast_readers.py holds them to that.

_CALL_FIELDS = frozenset(ToolCall.FIELDS)
_MESSAGE_FIELDS = frozenset(Message.FIELDS)
_new_call = ToolCall.__new__
_new_message = Message.__new__


def _fast_call(doc: Any) -> ToolCall | None:
    """The tool call the full reader would build from ``doc``, or None to let it run."""
    if type(doc) is not dict:
        return None
    name = doc.get("tool_name")
    duration = doc.get("duration_ms")
    if type(name) is not str or not (
        duration is None or type(duration) is int or type(duration) is float
    ):
        return None
    keys = tuple(doc)
    call: ToolCall = _new_call(ToolCall)
    call.tool_name = name
    call.arguments = doc.get("arguments")
    call.duration_ms = duration
    call._keys = keys
    call.extra = (
        {}
        if _CALL_FIELDS.issuperset(keys)
        else {k: v for k, v in doc.items() if k not in _CALL_FIELDS}
    )
    call._loader = None
    if "result" in doc:
        stored = doc["result"]
        blob = is_ref(stored)
        call._has_result, call._stored, call._is_blob = True, stored, blob
        call._loaded = not blob
        call._value = None if blob else stored
    else:
        call._has_result, call._stored, call._is_blob = False, None, False
        call._loaded, call._value = True, None
    return call


def _fast_message(doc: Any) -> Message | None:
    """The message the full reader would build from ``doc``, or None to let it run."""
    if type(doc) is not dict:
        return None
    role = doc.get("role")
    timestamp = doc.get("timestamp")
    calls = doc.get("tool_calls")
    if (
        type(role) is not str
        or not (timestamp is None or type(timestamp) is str)
        or not (calls is None or type(calls) is list)
    ):
        return None
    tool_calls: list[ToolCall] | None = None
    if calls is not None:
        tool_calls = []
        for item in calls:
            call = _fast_call(item)
            if call is None:
                return None
            tool_calls.append(call)
    keys = tuple(doc)
    message: Message = _new_message(Message)
    message.role = role
    message.content = doc.get("content")
    message.timestamp = timestamp
    message.tool_calls = tool_calls
    message._keys = keys
    message.extra = (
        {}
        if _MESSAGE_FIELDS.issuperset(keys)
        else {k: v for k, v in doc.items() if k not in _MESSAGE_FIELDS}
    )
    return message


def read_messages(docs: list[Any], path: str) -> list[Message]:
    """``Message.from_json`` of each of ``docs``, the list at ``path`` of a document;
    a path is made only for a message that the full reader has to look at."""
    messages = []
    for i, doc in enumerate(docs):
        message = _fast_message(doc)
        if message is None:
            message = Message._from_json_checked(doc, at(path, i))
        messages.append(message)
    return messages
