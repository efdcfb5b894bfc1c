"""Which values of a state move to a blob store, and the references left in their place.

No I/O here: :func:`offload` walks a state and returns the state to commit (large values
replaced by references) plus the blobs to store first. What moves:

- a ``str`` leaf whose UTF-8 encoding is larger than ``OffloadPolicy.threshold`` bytes
  (default 4096), e.g. a retrieved document or a long tool output;
- every ``bytes``, ``bytearray`` or ``memoryview`` leaf, whatever its size: JSON cannot
  hold bytes, so a blob is the only exact way to keep them;
- every :class:`Artifact`, whatever its size: the caller asked for it.

What never moves: dicts and lists (the containers the state is built from, even when
large: deltas already store only what changed in them), dict keys, numbers, booleans,
``None``, and references already in the state. A reference looks like::

    {"$blob": "sha256:9f86d0...", "uri": "file:///blobs/<run>/9f86...", "size": 48213,
     "codec": "zstd", "type": "text"}

``type`` says what loading it returns: ``"text"`` gives a ``str``, ``"bytes"`` gives
``bytes``. An artifact's ``media_type``, when given, is kept beside it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import ne
from typing import Any

import orjson

from agentckpt._core.blobs import BLOB_KEY, BlobRef, compress, digest_of, is_ref
from agentckpt._core.codec import ORJSON_STRICT, Limits
from agentckpt.errors import ConfigurationError, InvalidValueError

__all__ = [
    "Artifact",
    "OffloadPolicy",
    "PendingBlob",
    "blob_type",
    "changed_members",
    "changed_values",
    "encodings_hold_refs",
    "encodings_of",
    "may_hold_refs",
    "offload",
    "ref_digests",
    "ref_uris",
    "refs_in",
]

TYPE_KEY = "type"
MEDIA_TYPE_KEY = "media_type"
TEXT = "text"
BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class Artifact:
    """A value to store as a blob whatever its size, e.g. a generated file.

    Put it anywhere in a state: ``state["report"] = Artifact(pdf_bytes, "application/pdf")``.
    After the commit the state holds the reference instead; load it with
    ``ctx.load(state["report"])``.
    """

    data: bytes | bytearray | memoryview | str
    media_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OffloadPolicy:
    """When a ``str`` leaf is large enough to move to the blob store.

    ``threshold`` is in bytes of UTF-8. Bytes-like leaves and :class:`Artifact` values
    always move (see the module docstring).
    """

    threshold: int = 4096

    def __post_init__(self) -> None:
        if type(self.threshold) is not int or self.threshold < 0:
            raise ConfigurationError(
                f"OffloadPolicy.threshold must be an int >= 0, got {self.threshold!r}"
            )


@dataclass(frozen=True, slots=True)
class PendingBlob:
    """A blob to make durable before the step that references it commits.

    ``data`` is the stored (possibly compressed) form; ``codec`` says how to undo it.
    """

    digest: str
    codec: str
    size: int
    data: bytes
    uri: str


# orjson refuses bytes, bytearray, memoryview and (with this option) dataclasses such as
# Artifact; everything it encodes is a JSON value, offloaded only for a long str.
_STRICT = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_REF_KEY = orjson.dumps(BLOB_KEY) + b":"


def _encoded(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value, None, _STRICT)
    except TypeError:
        return None


def _nothing_moves(value: Any, threshold: int) -> bool:
    """True when ``value`` certainly holds nothing :func:`offload` moves, found at C speed.

    It holds no bytes-like value and no Artifact if orjson encodes it, and no str over
    ``threshold`` bytes of UTF-8 if its encoding is at most ``threshold + 2`` bytes long
    (such a str alone, quoted, would be longer). False means "walk it and see".
    """
    encoded = _encoded(value)
    return encoded is not None and len(encoded) <= threshold + 2


def _all_members_plain(state: Any, threshold: int) -> bool:
    """True when no member of the object ``state`` holds anything to move (see
    :func:`_nothing_moves`): all encoded at once, at C speed."""
    if type(state) is not dict or is_ref(state) or not state:
        return _nothing_moves(state, threshold)
    count = len(state)
    try:
        # Each encoding is dropped as soon as it is measured: holding hundreds of them
        # costs more in the allocator than encoding them.
        longest = max(
            map(len, map(orjson.dumps, state.values(), repeat(None, count), repeat(_STRICT, count)))
        )
    except TypeError:
        return False
    return longest <= threshold + 2


def changed_members(state: Any, previous: Any) -> bytes | None:
    """Which members of the object ``state`` differ (by ``==``, at C speed) from those of
    ``previous``, in order: one byte a member, 1 when it differs, else 0 (the form the
    store's plan combines its masks in); None unless both are objects with the same
    keys in the same order (or when a value cannot be compared)."""
    if type(state) is not dict or type(previous) is not dict or len(state) != len(previous):
        return None
    try:
        if list(state) != list(previous):
            return None
        flags = bytes(map(ne, state.values(), previous.values()))
    except Exception:  # a value whose == raises or is not a bool (an array type, ...)
        return None
    # An __ne__ that answers an int other than 0 or 1 is not a comparison to rely on.
    return flags if not flags.translate(None, b"\x00\x01") else None


def changed_values(state: Any, previous: Any) -> list[Any] | None:
    """The values of the members of the object ``state`` that differ (by ``==``, at C
    speed) from those of ``previous``; None unless both are objects with the same keys
    in the same order (or when a value cannot be compared)."""
    differs = changed_members(state, previous)
    return None if differs is None else list(itertools.compress(state.values(), differs))


def _values_plain(values: list[Any], threshold: int) -> bool:
    """True when none of ``values`` holds anything to move (see :func:`_nothing_moves`)."""
    return all(_nothing_moves(value, threshold) for value in values)


def may_hold_refs(values: list[Any]) -> bool:
    """False when none of ``values`` certainly holds a blob reference (C speed)."""
    for value in values:
        encoded = _encoded(value)
        if encoded is None or _REF_KEY in encoded:
            return True
    return False


def encodings_of(values: list[Any]) -> list[bytes] | None:
    """The strict encodings of ``values`` (the codec's ``ORJSON_STRICT``: what the
    store's plan encodes a member with), at C speed; None when one does not encode so
    (bytes, an Artifact, an integer beyond 64 bits, ...).

    One encoding a value serves the offload's check (:func:`offload`'s ``encodings``),
    the reference scan (:func:`encodings_hold_refs`) and the plan, which each made their
    own before.
    """
    count = len(values)
    try:
        return list(map(orjson.dumps, values, repeat(None, count), repeat(ORJSON_STRICT, count)))
    except TypeError:
        return None


def encodings_hold_refs(encodings: list[bytes]) -> bool:
    """:func:`may_hold_refs` of the values encoded as ``encodings`` (from
    :func:`encodings_of`). Joined by a NUL byte, which no JSON encoding holds, so no
    match spans two of them."""
    return _REF_KEY in b"\0".join(encodings)


def offload(
    state: Any,
    policy: OffloadPolicy,
    uri_for: Callable[[str], str],
    *,
    changed: list[Any] | None = None,
    encodings: list[bytes] | None = None,
    max_depth: int = Limits().max_depth,
    max_bytes: int = Limits().max_bytes,
) -> tuple[Any, list[PendingBlob]]:
    """Return ``(state to commit, blobs to store first)``.

    ``uri_for(digest)`` names where a blob with that sha256 lives. Containers on the path
    to a moved value are copied; everything else is shared with ``state``, which is not
    modified. Equal values become one blob.

    The members of an object state that certainly hold nothing to move (encoded, they
    are shorter than the threshold) are not walked: a step costs a Python walk only of
    the members that hold long strings or binary values. ``changed`` (from
    :func:`changed_values`) lists the only members that may hold any, the others being
    equal to the members of a state this function already returned: only those are
    looked at, so a step costs what it changed. ``encodings``, with ``changed`` only:
    their strict encodings (:func:`encodings_of`), so they are not encoded again.

    A container nested deeper than ``max_depth`` (the store's ``Limits.max_depth``) is
    refused here with the codec's :class:`InvalidValueError`: the walk recurses, so a
    state thousands of levels deep would otherwise end in a ``RecursionError``.

    A value whose raw bytes (UTF-8 for text) are more than ``max_bytes`` (the store's
    ``Limits.max_bytes``) is refused with :class:`InvalidValueError` naming its path,
    before it is hashed or compressed: the bound a value kept inline in the state has
    (whole, the state may be larger), so the size of one value is bounded wherever it
    ends up.
    """
    threshold = policy.threshold
    if changed is not None and encodings is not None:
        # What _values_plain finds, from the encodings at hand.
        if not encodings or max(map(len, encodings)) <= threshold + 2:
            return state, []
    elif changed is not None and _values_plain(changed, threshold):
        return state, []
    if changed is None and _all_members_plain(state, threshold):
        return state, []
    pending: dict[str, PendingBlob] = {}

    def blob(data: bytes, kind: str, media_type: str | None, path: str) -> dict[str, Any]:
        if len(data) > max_bytes:
            raise InvalidValueError(
                path,
                f"value is {len(data)} bytes, over the limit of {max_bytes} bytes for one "
                "blob (Limits.max_bytes; raise it for larger blobs)",
            )
        digest = digest_of(data)
        found = pending.get(digest)
        if found is None:
            codec, stored = compress(data)
            found = PendingBlob(digest, codec, len(data), stored, uri_for(digest))
            pending[digest] = found
        ref = BlobRef(digest=digest, size=found.size, codec=found.codec, uri=found.uri)
        out = ref.to_json()
        out[TYPE_KEY] = kind
        if media_type is not None:
            out[MEDIA_TYPE_KEY] = media_type
        return out

    def walk(value: Any, path: str, level: int = 1) -> Any:
        cls = type(value)
        if level > max_depth and (cls is dict or cls is list):
            # The same refusal (and path) as the codec's, which would see it next.
            raise InvalidValueError(
                path,
                f"nesting is deeper than the limit of {max_depth} levels "
                "(Limits.max_depth); a reference cycle also causes this",
            )
        if cls is str:
            # A str's UTF-8 form is at most 4 bytes per character: skip the encode when
            # even that cannot pass the threshold.
            if len(value) * 4 <= policy.threshold:
                return value
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError:
                return value  # the codec refuses it later, naming the path
            return blob(data, TEXT, None, path) if len(data) > policy.threshold else value
        if cls is bytes or cls is bytearray or cls is memoryview:
            return blob(bytes(value), BYTES, None, path)
        if cls is Artifact:
            data = value.data
            if type(data) is str:
                try:
                    return blob(data.encode("utf-8"), TEXT, value.media_type, path)
                except UnicodeEncodeError:
                    raise InvalidValueError(
                        path, "Artifact text contains a lone surrogate; it is not valid UTF-8"
                    ) from None
            if type(data) in (bytes, bytearray, memoryview):
                return blob(bytes(data), BYTES, value.media_type, path)
            raise InvalidValueError(
                path, f"Artifact data must be str or bytes, got {type(data).__name__}"
            )
        if cls is dict:
            if is_ref(value):
                return value
            out_dict: dict[str, Any] | None = None
            for key, item in value.items():
                if not path and _nothing_moves(item, threshold):
                    continue  # a member of the state without a long str or bytes
                new = walk(item, f"{path}/{_escape(key) if type(key) is str else key}", level + 1)
                if new is not item:
                    if out_dict is None:
                        out_dict = dict(value)
                    out_dict[key] = new
            return value if out_dict is None else out_dict
        if cls is list:
            out_list: list[Any] | None = None
            for index, item in enumerate(value):
                new = walk(item, f"{path}/{index}", level + 1)
                if new is not item:
                    if out_list is None:
                        out_list = list(value)
                    out_list[index] = new
            return value if out_list is None else out_list
        return value

    return walk(state, ""), list(pending.values())


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def refs_in(document: Any) -> Iterator[dict[str, Any]]:
    """Every blob reference inside ``document`` (a state, or a stored delta)."""
    stack = [document]
    while stack:
        value = stack.pop()
        cls = type(value)
        if cls is dict:
            if is_ref(value):
                yield value
            else:
                stack.extend(value.values())
        elif cls is list:
            stack.extend(value)


def ref_digests(document: Any) -> set[str]:
    """The sha256 digests of the blobs ``document`` references."""
    return {BlobRef.from_json(ref).digest for ref in refs_in(document)}


def ref_uris(document: Any) -> set[str]:
    """The URIs of the blobs ``document`` references."""
    encoded = _encoded(document)
    if encoded is not None and (b"$" not in encoded or _REF_KEY not in encoded):
        return set()  # no object in it has a "$blob" member: no reference (C speed)
    return {str(ref["uri"]) for ref in refs_in(document)}


def blob_type(ref: dict[str, Any]) -> str:
    """``"text"`` or ``"bytes"``: what loading this reference returns.

    A reference written without a ``type`` (e.g. by ``Store.put_blob``) loads as bytes.
    """
    kind = ref.get(TYPE_KEY, BYTES)
    return TEXT if kind == TEXT else BYTES
