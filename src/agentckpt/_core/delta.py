"""Exact deltas between JSON documents, as RFC 6902 JSON Patch.

Only the ``add``, ``remove`` and ``replace`` ops are produced or accepted; paths are
RFC 6901 JSON Pointers (``""`` is the whole document, ``-`` appends to an array). Deltas are
exact in the sense of :func:`agentckpt._core.codec.same`: for all JSON values ``a`` and
``b``, ``same(apply(a, diff(a, b)), b)`` holds, including key order, ``null`` values,
``-0.0`` and ``1`` versus ``1.0`` versus ``True``.

RFC 7386 merge patch is not used: it cannot set a value to ``null`` (null means delete)
and can only replace arrays wholesale, which makes appending one message to a long
conversation cost the whole conversation.
"""

from __future__ import annotations

import re
from typing import Any

from agentckpt._core.codec import encode_trusted, same
from agentckpt.errors import InvalidPatchError

__all__ = ["Patch", "append_ops", "apply", "clone", "diff", "diff_into", "escape_key"]

Patch = list[dict[str, Any]]
"""A JSON Patch: a list of ``{"op": ..., "path": ..., "value": ...}`` dicts."""

_OPS = frozenset({"add", "remove", "replace"})
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_TILDE = re.compile(r"~(?![01])")


def _escape(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


def escape_key(key: str) -> str:
    """``key`` as a JSON Pointer segment (RFC 6901: ``~`` and ``/`` escaped)."""
    return _escape(key)


def diff_into(old: Any, new: Any, ptr: str, ops: Patch) -> None:
    """Append to ``ops`` the ops that turn ``old`` (at pointer ``ptr``) into ``new``;
    the two must not be the same (:func:`same`). For callers that already know which
    parts of a document changed; recursion limits as in :func:`diff`."""
    mark = len(ops)
    try:
        _diff(old, new, ptr, ops)
    except RecursionError:
        del ops[mark:]
        ops.append({"op": "replace", "path": ptr, "value": new})


def append_ops(items: list[Any], ptr: str) -> Patch:
    """``add`` ops appending ``items`` to the array at ``ptr``."""
    return _appends(items, ptr)


def diff(old: Any, new: Any) -> Patch:
    """Return a patch that turns ``old`` into exactly ``new``; ``[]`` if they are the same.

    Appending items to an array (the usual way a conversation grows) yields one ``add`` op
    with path ``.../-`` per new item, so the delta's size depends only on what was added.
    Objects are patched key by key unless the key order could not be reproduced, in which
    case the object is replaced. Arrays are patched element by element after their common
    prefix, or as a sliding window (remove k items after the common prefix, append new
    ones) when that is smaller, or replaced when that is smaller still.

    The patch shares values with ``new`` (nothing is copied): encode or apply it before
    mutating ``new``.
    """
    ops: Patch = []
    if same(old, new):
        return ops
    try:
        _diff(old, new, "", ops)
    except RecursionError:
        # The recursion follows the nesting, a few frames per level: values deeper than
        # about 300 levels (allowed only with raised Limits) get a whole replacement,
        # which is just as exact.
        return [{"op": "replace", "path": "", "value": new}]
    return ops


def _diff(old: Any, new: Any, ptr: str, ops: Patch) -> None:
    # Callers only get here for values that are not the same.
    cls = type(old)
    if cls is dict and type(new) is dict:
        _diff_dict(old, new, ptr, ops)
    elif cls is list and type(new) is list:
        _diff_list(old, new, ptr, ops)
    else:
        ops.append({"op": "replace", "path": ptr, "value": new})


def _diff_dict(old: dict[str, Any], new: dict[str, Any], ptr: str, ops: Patch) -> None:
    kept = [key for key in old if key in new]
    new_keys = list(new)
    # Dicts keep insertion order: removing keys keeps the survivors in old's order and
    # adding puts keys at the end. new's order is reachable only if it starts with the
    # surviving keys in old's order (the remaining keys are then exactly the added ones).
    if new_keys[: len(kept)] != kept:
        ops.append({"op": "replace", "path": ptr, "value": new})
        return
    for key in old:
        if key not in new:
            ops.append({"op": "remove", "path": f"{ptr}/{_escape(key)}"})
    for key in kept:
        before, after = old[key], new[key]
        if not same(before, after):
            _diff(before, after, f"{ptr}/{_escape(key)}", ops)
    for key in new_keys[len(kept) :]:
        ops.append({"op": "add", "path": f"{ptr}/{_escape(key)}", "value": new[key]})


def _diff_list(old: list[Any], new: list[Any], ptr: str, ops: Patch) -> None:
    n_old, n_new = len(old), len(new)
    if n_new >= n_old and same(old, new[:n_old]):
        # The dominant case: items appended. One comparison of the shared prefix at C speed
        # instead of one per element.
        ops.extend(_appends(new[n_old:], ptr))
        return
    common = min(n_old, n_new)
    prefix = 0
    while prefix < common and same(old[prefix], new[prefix]):
        prefix += 1
    best: Patch | None = None
    best_size = 0
    if prefix < common:
        best = _window_ops(old, new, prefix, ptr)
        if best is not None:
            best_size = _size(best)
    elementwise = _elementwise_ops(old, new, prefix, ptr, best_size if best else None)
    if elementwise is not None:
        best, best_size = elementwise
    assert best is not None
    # Sizes count one separating comma per op. The ops stay unless replacing the whole
    # array is strictly smaller; checking a lower bound first avoids encoding a big array
    # just to learn that a small delta wins.
    replacement: dict[str, Any] = {"op": "replace", "path": ptr, "value": new}
    overhead = len(encode_trusted({"op": "replace", "path": ptr, "value": 0}))  # "0" ~ ","
    if (
        not _size_reaches(new, best_size - overhead)
        and len(encode_trusted(replacement)) + 1 < best_size
    ):
        best = [replacement]
    ops.extend(best)


def _appends(items: list[Any], ptr: str) -> Patch:
    append = f"{ptr}/-"
    return [{"op": "add", "path": append, "value": item} for item in items]


def _size(ops: Patch) -> int:
    """Encoded size of ``ops`` inside a patch: each op plus its separating comma."""
    return sum(len(encode_trusted(op)) + 1 for op in ops)


# Repeated items (e.g. identical tool results) could make the sliding-window search try
# many cut points; a few is enough for real windows.
_MAX_WINDOW_TRIES = 4


def _window_ops(old: list[Any], new: list[Any], start: int, ptr: str) -> Patch | None:
    """Ops for a sliding window, if ``new`` is one over ``old``; else None.

    A window keeps ``old[:start]`` (e.g. a system prompt), drops the next k items, keeps
    the rest and appends new items. Element by element that shifts, and so rewrites,
    every later item; removing k items at ``start`` and appending says it in a few ops.
    """
    n_old, n_new = len(old), len(new)
    first = new[start]
    cut = start
    for _ in range(_MAX_WINDOW_TRIES):
        try:
            # list.index compares with == at C speed; same() then checks strictly.
            cut = old.index(first, cut + 1)
        except ValueError:
            return None
        kept = n_old - cut
        if start + kept <= n_new and same(old[cut:], new[start : start + kept]):
            at = f"{ptr}/{start}"
            window: Patch = [{"op": "remove", "path": at} for _ in range(cut - start)]
            return window + _appends(new[start + kept :], ptr)
    return None


def _elementwise_ops(
    old: list[Any], new: list[Any], start: int, ptr: str, budget: int | None
) -> tuple[Patch, int] | None:
    """Diff position by position from ``start``, then fix the tail.

    Returns the ops and their size, or None as soon as the size reaches ``budget``: when a
    sliding window is already known to be small, the diff of a shifted array (huge) is not
    worth finishing.
    """
    n_old, n_new = len(old), len(new)
    ops: Patch = []
    size = 0
    for i in range(start, min(n_old, n_new)):
        before, after = old[i], new[i]
        if not same(before, after):
            mark = len(ops)
            _diff(before, after, f"{ptr}/{i}", ops)
            size += _size(ops[mark:])
            if budget is not None and size >= budget:
                return None
    if n_new > n_old:
        tail = _appends(new[n_old:], ptr)
    else:
        # Highest index first, so the indices still to remove do not shift.
        tail = [{"op": "remove", "path": f"{ptr}/{i}"} for i in range(n_old - 1, n_new - 1, -1)]
    size += _size(tail)
    if budget is not None and size >= budget:
        return None
    return ops + tail, size


def _size_reaches(value: Any, budget: int) -> bool:
    """Tell whether the JSON encoding of ``value`` is at least ``budget`` bytes long.

    Adds up a lower bound of the encoded size and stops as soon as it reaches the budget,
    so the cost is bounded by the budget (the size of the ops it competes with), not by the
    size of ``value``: deciding to keep a small delta against a huge array stays cheap.
    """
    total = 0
    pending = [value]
    while pending:
        if total >= budget:
            return True
        item = pending.pop()
        cls = type(item)
        if cls is str:
            total += len(item) + 2
        elif cls is list:
            total += 2 + max(len(item) - 1, 0)
            pending.extend(item)
        elif cls is dict:
            # Braces, and per entry at least the quoted key, a colon and a comma.
            total += 1 + sum(len(key) + 4 for key in item)
            pending.extend(item.values())
        else:
            total += 1
    return total >= budget


def apply(doc: Any, patch: Patch, *, in_place: bool = False, consume: bool = False) -> Any:
    """Apply ``patch`` to ``doc`` and return the result.

    By default ``doc`` is left untouched: only the containers along the patched paths are
    copied (shallowly), and the result shares every unchanged subtree with ``doc``. With
    ``in_place=True`` those containers are modified instead; the root may still be replaced,
    so always use the returned value. Values taken from the patch are copied, so mutating
    the result never changes the patch; with ``consume=True`` they are not (the caller
    gives the patch away, e.g. one it has just decoded, and never uses it again).

    Raises:
        InvalidPatchError: naming the op's index and path, if an op is unknown or malformed,
            a pointer is malformed, a path does not exist or an index is out of range.
            With ``in_place=True``, the ops before the failing one have been applied.
    """
    if type(patch) is not list:
        raise InvalidPatchError(f"a patch is a list of ops, not a {type(patch).__name__}")
    # Containers this call created (copies of doc's and values cloned from the patch), by
    # id: those can be mutated freely. Holding the objects keeps their ids from being reused.
    owned: dict[int, Any] = {}
    root = doc
    for index, op in enumerate(patch):
        root = _apply_op(root, op, index, owned, in_place, consume)
    return root


def _apply_op(
    root: Any, op: Any, index: int, owned: dict[int, Any], in_place: bool, consume: bool
) -> Any:
    if type(op) is not dict:
        raise InvalidPatchError(f"patch op {index}: an op is a dict, not a {type(op).__name__}")
    name = op.get("op")
    path = op.get("path")
    # What the errors name the op by; the message is built only when one is raised.
    at = (index, name, path)
    if type(name) is not str or name not in _OPS:
        raise InvalidPatchError(
            f"{_where(at)}: unknown op; only add, remove and replace are supported"
        )
    if type(path) is not str:
        raise InvalidPatchError(f"{_where(at)}: the path must be a str")
    if path and path[0] != "/":
        raise InvalidPatchError(
            f"{_where(at)}: malformed pointer: it must be empty or start with '/'"
        )
    if "~" in path and _BAD_TILDE.search(path):
        raise InvalidPatchError(f"{_where(at)}: malformed pointer: '~' must be followed by 0 or 1")
    value: Any = None
    if name != "remove":
        if "value" not in op:
            raise InvalidPatchError(f"{_where(at)}: the op has no 'value'")
        value = op["value"] if consume else clone(op["value"])
        if type(value) is dict or type(value) is list:
            owned[id(value)] = value
    if not path:
        if name == "remove":
            raise InvalidPatchError(f"{_where(at)}: cannot remove the whole document")
        return value
    tokens = path[1:].split("/")
    if "~" in path:
        tokens = [_unescape(token) for token in tokens]

    if not in_place:
        root = _owned(root, owned)
    parent = root
    for depth, token in enumerate(tokens[:-1]):
        child = _child(parent, token, tokens, depth, at)
        if not in_place:
            copy = _owned(child, owned)
            if copy is not child:
                parent[_index(parent, token)] = copy
            child = copy
        parent = child

    last = tokens[-1]
    cls = type(parent)
    if cls is dict:
        if name == "add":
            parent[last] = value
        elif last not in parent:
            raise InvalidPatchError(
                f"{_where(at)}: no member {last!r} in the object at {_prefix(tokens, -1)!r}"
            )
        elif name == "remove":
            del parent[last]
        else:
            parent[last] = value
    elif cls is list:
        size = len(parent)
        if last == "-" and name == "add":
            parent.append(value)
            return root
        if not _ARRAY_INDEX.fullmatch(last):
            raise InvalidPatchError(
                f"{_where(at)}: {last!r} is not an array index (the array is at "
                f"{_prefix(tokens, -1)!r})"
            )
        position = int(last)
        if position > size or (position == size and name != "add"):
            raise InvalidPatchError(
                f"{_where(at)}: index {position} is out of range for the array of length {size} "
                f"at {_prefix(tokens, -1)!r}"
            )
        if name == "add":
            parent.insert(position, value)
        elif name == "remove":
            del parent[position]
        else:
            parent[position] = value
    else:
        raise InvalidPatchError(
            f"{_where(at)}: the value at {_prefix(tokens, -1)!r} is a {cls.__name__}, "
            "not an object or array"
        )
    return root


_At = tuple[int, Any, Any]  # an op's index, name and path


def _where(at: _At) -> str:
    index, name, path = at
    return f"patch op {index} ({name!r} at {path!r})"


def _unescape(token: str) -> str:
    if "~" in token:
        # ~1 first: "~01" means "~1", not "/".
        return token.replace("~1", "/").replace("~0", "~")
    return token


def _prefix(tokens: list[str], end: int) -> str:
    """The pointer made of ``tokens[:end]``, for error messages."""
    return "".join("/" + _escape(token) for token in tokens[:end])


def _index(container: Any, token: str) -> Any:
    # Only called with tokens _child already resolved in this container.
    return int(token) if type(container) is list else token


def _child(parent: Any, token: str, tokens: list[str], depth: int, at: _At) -> Any:
    cls = type(parent)
    if cls is dict:
        if token in parent:
            return parent[token]
        raise InvalidPatchError(
            f"{_where(at)}: no member {token!r} in the object at {_prefix(tokens, depth)!r}"
        )
    if cls is list:
        if not _ARRAY_INDEX.fullmatch(token):
            raise InvalidPatchError(
                f"{_where(at)}: {token!r} is not an array index (the array is at "
                f"{_prefix(tokens, depth)!r})"
            )
        position = int(token)
        if position < len(parent):
            return parent[position]
        raise InvalidPatchError(
            f"{_where(at)}: index {position} is out of range for the array of length "
            f"{len(parent)} at {_prefix(tokens, depth)!r}"
        )
    raise InvalidPatchError(
        f"{_where(at)}: the value at {_prefix(tokens, depth)!r} is a {cls.__name__}, "
        "not an object or array"
    )


def _owned(container: Any, owned: dict[int, Any]) -> Any:
    """Return a copy of ``container`` this apply() may mutate (itself if already owned)."""
    if id(container) in owned:
        return container
    cls = type(container)
    if cls is not dict and cls is not list:
        # Not a container: the caller reports the error when it tries to descend.
        return container
    copy = container.copy()
    owned[id(copy)] = copy
    return copy


def clone(value: Any) -> Any:
    """Copy the containers of a JSON value (scalars are immutable and shared).

    Iterative, so values as deep as the codec allows never hit the recursion limit.
    """
    cls = type(value)
    if cls is not dict and cls is not list:
        return value
    top = value.copy()
    pending = [top]
    while pending:
        container = pending.pop()
        if type(container) is dict:
            for key, item in container.items():
                kind = type(item)
                if kind is dict or kind is list:
                    item = item.copy()
                    container[key] = item
                    pending.append(item)
        else:
            for i, item in enumerate(container):
                kind = type(item)
                if kind is dict or kind is list:
                    item = item.copy()
                    container[i] = item
                    pending.append(item)
    return top
