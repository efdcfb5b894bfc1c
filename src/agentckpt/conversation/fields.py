"""Reading and writing JSON objects that keep unknown keys and key order; no I/O.

The format's objects (state, message, tool call, config, metadata) share one rule: keys
the code does not know are kept in ``extra``, and the order of the keys read is kept, so
reading then writing gives back the same document exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from agentckpt._core.codec import Limits, same, validate
from agentckpt.errors import InvalidValueError

__all__ = [
    "NUMBER",
    "at",
    "check_extra",
    "emit",
    "need",
    "need_object",
    "split",
    "validate_at",
]


def at(path: str, key: str | int) -> str:
    """The JSON Pointer of ``key`` inside the value at ``path``."""
    text = str(key).replace("~", "~0").replace("/", "~1")
    return f"{path}/{text}"


def need(value: Any, types: tuple[type, ...], path: str, what: str) -> None:
    """Refuse a value (other than None) not of ``types``, naming its path."""
    # bool is an int subclass; a count or a temperature that is True is not a number.
    if value is not None and (type(value) is bool or not isinstance(value, types)):
        raise InvalidValueError(path, f"{what}, not {type(value).__name__}")


def need_object(value: Any, path: str, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else :class:`InvalidValueError` at ``path``."""
    if type(value) is not dict:
        raise InvalidValueError(path, f"{what} must be a JSON object, not {type(value).__name__}")
    return value


def split(doc: dict[str, Any], known: Iterable[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The document's key order, and its keys that are not ``known`` (the extras)."""
    names = set(known)
    return tuple(doc), {k: v for k, v in doc.items() if k not in names}


def check_extra(extra: Mapping[str, Any] | None, known: Iterable[str], owner: str) -> None:
    """Refuse extras that are really fields (they would be written twice)."""
    if not extra:
        return
    clash = sorted(set(extra) & set(known))
    if clash:
        raise ValueError(f"{owner} extra keys {clash} are fields; pass them as arguments")


def emit(
    order: tuple[str, ...], items: Iterable[tuple[str, Any]], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """Keys in the order they were read; new ones after, known fields before extras."""
    values = dict(items)
    if extra:
        values.update(extra)
    # Usually the fields come in the order read already (a record written by this code,
    # or read and written back): then ``values`` is the answer, without a second dict.
    if tuple(values)[: len(order)] == order:
        return values
    out = {key: values.pop(key) for key in order if key in values}
    out.update(values)
    return out


NUMBER = (int, float)
"""The types a JSON number field accepts (bool excluded by :func:`need`)."""


class FieldRecord:
    """A JSON object with known ``FIELDS`` as attributes, kept in its stored key order,
    plus the unknown keys in ``extra``. Subclasses declare the slots."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    _keys: tuple[str, ...]
    extra: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The object as stored: known fields that are set or were stored, then extras."""
        keys = self._keys
        items = [
            (name, value)
            for name in self.FIELDS
            if (value := getattr(self, name)) is not None or name in keys
        ]
        return emit(keys, items, self.extra)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, FieldRecord)
        return same(self.to_json(), other.to_json())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json()!r})"


def validate_at(value: Any, path: str, *, limits: Limits) -> None:
    """Check that ``value`` can be stored at ``path`` of a state, before it joins it.

    The limits apply to the whole state, so the value is checked as deep as it will sit
    (one level per segment of ``path``); an :class:`InvalidValueError` names the path of
    the bad part inside the state. Costs O(value), not O(state).
    """
    depth = path.count("/")
    nested = value
    for _ in range(depth):
        nested = [nested]
    try:
        validate(nested, limits=limits)
    except InvalidValueError as exc:
        # Each wrapping list adds "/0" in front of the path inside the value.
        raise InvalidValueError(path + exc.path[2 * depth :], exc.reason) from None
