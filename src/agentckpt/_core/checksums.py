"""Checksums of whole states, computed from per-member digests so a commit re-hashes only
the members that changed.

A state that is a JSON object is checksummed as "v2": sha256 of a tag followed by, for
each member in order, the exact encoding of its key and the sha256 of the exact encoding
of its value. Equal v2 checksums mean equal keys in equal order with values of equal
encodings, that is equal encodings of the whole state: v2 proves what "v1" (sha256 of the
state's whole encoding, kept for other states and for rows written before v2) proves.
The tag keeps the two apart: a v1 input is a JSON document, which never starts with it.

:class:`Members` keeps what a commit needs of each member of the last committed state:
its encoding (the bytes a snapshot joins, and the one a new value is compared with), its
digest, and for an array the hash state of its encoding without the closing bracket, so
appending items to it re-hashes only the items. A member that is not an array and has
changed keeps a hash state of its encoding up to where its last change ended (a
:class:`Mark`), so the next change after that point (a message appended to a list
nested in it) re-hashes only what follows.
"""

from __future__ import annotations

import hashlib
from operator import add, itemgetter
from typing import Any, NamedTuple

import orjson

from agentckpt._core.codec import ORJSON_STRICT, encode_fast, encode_trusted

__all__ = ["Mark", "Members", "checksum_of", "checksum_v1", "matches"]

_V2_TAG = b"agentckpt/checksum/v2\n"

# The first byte of an object's or an array's encoding (no encoding is empty).
_OPENERS = frozenset(b"{[")

Hasher = Any  # hashlib's sha256 object (its type is private)
_strict = orjson.dumps  # with ORJSON_STRICT: encode_fast's encoding, TypeError for its None

# hashlib lets the GIL go to hash 2048 bytes or more in one call (and a hash object that
# did so once lets it go on every later update). On the event loop's thread that hands
# the GIL to the SQLite worker, which takes it back after each statement, usually before
# the loop's thread has woken: the loop then waits for the worker's pause or the 5 ms
# switch interval (measured: 20 us a conversation write, in 1 write of 5, for 1.2 us of
# hashing). Fed in smaller pieces, the hash keeps the GIL: 0.1 us a piece.
_PIECE = 2047
_sha256 = hashlib.sha256


def _hasher(data: bytes | memoryview) -> Hasher:
    """A sha256 object fed ``data`` without letting the GIL go."""
    if len(data) <= _PIECE:
        return _sha256(data)
    hasher = _sha256()
    _feed(hasher, memoryview(data))
    return hasher


def _feed(hasher: Hasher, view: memoryview) -> None:
    for start in range(0, len(view), _PIECE):
        hasher.update(view[start : start + _PIECE])


def _digest(data: bytes) -> bytes:
    digest: bytes = _hasher(data).digest()
    return digest


class Mark(NamedTuple):
    """The sha256 state of a member encoding's first ``offset`` bytes."""

    hasher: Hasher
    offset: int


# Objects whose encoding is shorter than this are hashed whole when they change: a mark
# would cost more than it saves (and a hash state's memory in every cached head).
_MARK_BYTES = 8192

# Where a changed member's change ends is found from the end of its two encodings: the
# common tail is looked for up to this many bytes (what follows a nested list, about),
# past which the mark is put this far before the end, still correct, possibly useless.
_MAX_TAIL = 1 << 16


def _common_tail(old: bytes, new: bytes) -> int:
    """A lower bound, at most ``_MAX_TAIL``, of the length of the common end of ``old``
    and ``new``, and exact below that; each probe a memcmp from the end."""
    limit = min(len(old), len(new), _MAX_TAIL)
    good, probe = 0, 16
    while probe <= limit and new.endswith(memoryview(old)[len(old) - probe :]):
        good, probe = probe, 2 * probe
    bad = min(probe, limit + 1)
    while bad - good > 1:
        middle = (good + bad) // 2
        if new.endswith(memoryview(old)[len(old) - middle :]):
            good = middle
        else:
            bad = middle
    return good


def _marked_digest(old: bytes, mark: Mark | None, new: bytes) -> tuple[bytes, Mark]:
    """sha256 of ``new``, a member's encoding that replaces ``old``, and the new mark.

    ``mark`` hashes ``old[:mark.offset]``; when ``new`` starts with those very bytes,
    hashing starts from it. The new mark is where the change ends: before the bytes
    ``old`` and ``new`` end with (after a message appended to a nested list, the list's
    closing bracket and what follows it), where the next such change starts again.
    """
    start, hasher = 0, None
    if (
        mark is not None
        and mark.offset <= len(new)
        and new.startswith(memoryview(old)[: mark.offset])
    ):
        start, hasher = mark.offset, mark.hasher.copy()
    if hasher is None:
        hasher = _sha256()
    cut = max(len(new) - _common_tail(old, new), start)
    view = memoryview(new)
    _feed(hasher, view[start:cut])
    final = hasher.copy()
    _feed(final, view[cut:])
    return final.digest(), Mark(hasher, cut)


def _digests(value: bytes) -> tuple[bytes, Hasher | None]:
    """sha256 of an encoded value and, for an array, the hash of all but its ``]``."""
    if value[:1] == b"[":
        prefix = _hasher(memoryview(value)[:-1])
        final = prefix.copy()
        final.update(b"]")
        return final.digest(), prefix
    return _digest(value), None


class Members(NamedTuple):
    """The members of a committed object state, in order: keys, ``"key":`` and value
    encodings, ``"key":`` + value digest (what the v2 checksum hashes), array prefixes,
    and ``nested``: one byte a member, 1 when its value is an object or an array (its
    encoding opens with ``{`` or ``[``), else 0, so a commit tells the members it may
    share (immutable scalars) from those it must keep its own copies of without a pass
    over the values' types; ``marks``: for a member that is not an array and has changed
    since the members were computed whole, the :class:`Mark` of its encoding, else None.

    Shared by heads and never changed: :meth:`replaced` returns a new one. A prefix hash
    or a mark's hash is copied before it is fed. A named tuple: one is built per commit,
    and a tuple is cheaper to build than a frozen dataclass (one ``object.__setattr__`` a
    field).
    """

    keys: list[str]
    key_colons: list[bytes]
    values: list[bytes]
    parts: list[bytes]
    prefixes: list[Hasher | None]
    checksum: bytes
    length: int  # of encoding(), kept up to date by replaced() instead of summed again
    nested: bytes
    marks: list[Mark | None] | None = None  # None: no member has a mark

    @classmethod
    def of(cls, state: dict[str, Any]) -> Members:
        """Encode and hash every member of ``state`` (O(state): a first commit, a resume)."""
        keys = list(state)
        try:
            # One orjson call a key and a value and no Python frame of ours per member:
            # a resume of a 300-key state spent most of its time in the loop below.
            key_colons = [_strict(key, None, ORJSON_STRICT) + b":" for key in keys]
            values = [_strict(value, None, ORJSON_STRICT) for value in state.values()]
        except TypeError:  # a member needs the stdlib encoder: member by member
            return cls._of_each(keys, state)
        # The digests of the members that are not arrays without a frame of ours for a
        # small one; an array's goes through _digests, which keeps its prefix hash.
        digests = [
            _digests(value)
            if value[0] == 0x5B  # "["
            else (_sha256(value).digest() if len(value) <= _PIECE else _digest(value), None)
            for value in values
        ]
        return cls._build(keys, key_colons, values, digests)

    @classmethod
    def _of_each(cls, keys: list[str], state: dict[str, Any]) -> Members:
        key_colons = [encode_trusted(key) + b":" for key in keys]
        values: list[bytes] = []
        digests: list[tuple[bytes, Hasher | None]] = []
        for value in state.values():
            fast = encode_fast(value)
            if fast is not None:
                values.append(fast)
                digests.append(_digests(fast))
            else:
                # The stdlib encoder's bytes: no prefix hash, so items are never appended
                # to them in orjson's bytes (the whole array would encode otherwise).
                slow = encode_trusted(value)
                values.append(slow)
                digests.append((_digest(slow), None))
        return cls._build(keys, key_colons, values, digests)

    @classmethod
    def _build(
        cls,
        keys: list[str],
        key_colons: list[bytes],
        values: list[bytes],
        digests: list[tuple[bytes, Hasher | None]],
    ) -> Members:
        parts = list(map(add, key_colons, [digest for digest, _ in digests]))
        prefixes = [prefix for _, prefix in digests]
        count = len(values)
        length = sum(map(len, key_colons)) + sum(map(len, values)) + max(count - 1, 0) + 2
        nested = bytes(map(_OPENERS.__contains__, map(itemgetter(0), values)))
        return cls(keys, key_colons, values, parts, prefixes, _combine(parts), length, nested)

    def replaced(self, changes: dict[int, tuple[bytes, Hasher | None]]) -> Members:
        """These members with the values at some indices replaced: ``index -> (encoding,
        prefix hash to continue from or None)``; only those are hashed."""
        values = self.values.copy()
        parts = self.parts.copy()
        prefixes = self.prefixes.copy()
        nested = bytearray(self.nested)
        marks = self.marks
        copied = False  # marks is still self.marks (or None), not this one's own list
        length = self.length
        for index, (value, prefix) in changes.items():
            old = self.values[index]
            length += len(value) - len(old)
            nested[index] = value[0] in _OPENERS
            mark: Mark | None = None
            if prefix is not None:
                # Items appended to an array: hash only what follows the old prefix.
                fed = prefix.copy()
                view = memoryview(value)[len(old) - 1 : -1]
                if len(view) <= _PIECE:
                    fed.update(view)  # what _feed does for one piece, without its frame
                else:
                    _feed(fed, view)
                final = fed.copy()
                final.update(b"]")
                digest, prefix = final.digest(), fed
            elif len(value) >= _MARK_BYTES and value[0] == 0x7B and old[0] == 0x7B:  # "{"
                digest, mark = _marked_digest(old, None if marks is None else marks[index], value)
            else:
                digest, prefix = _digests(value)
            values[index] = value
            parts[index] = self.key_colons[index] + digest
            prefixes[index] = prefix
            if mark is not None or (marks is not None and marks[index] is not None):
                if not copied:
                    marks = marks.copy() if marks is not None else [None] * len(values)
                    copied = True
                assert marks is not None
                marks[index] = mark
        return Members(
            self.keys,
            self.key_colons,
            values,
            parts,
            prefixes,
            _combine(parts),
            length,
            bytes(nested),
            marks,
        )

    def encoding(self) -> bytes:
        """The whole state's encoding: its members' as the codec writes each, joined.

        Byte for byte the codec's encoding of the whole state, except when a member
        needs the stdlib encoder (integers beyond 64 bits), which writes some floats
        of the other members in another exact form; either decodes to the same state.
        """
        if not self.values:
            return b"{}"
        pieces = [b"{"]
        for key_colon, value in zip(self.key_colons, self.values, strict=True):
            pieces += (key_colon, value, b",")
        pieces[-1] = b"}"
        return b"".join(pieces)

    def size(self) -> int:
        """The length of :meth:`encoding`, without building it."""
        return self.length


def _combine(parts: list[bytes]) -> bytes:
    data = _V2_TAG + b"".join(parts)
    # One call for the usual few members (what _digest does, without its two frames).
    digest: bytes = _sha256(data).digest() if len(data) <= _PIECE else _digest(data)
    return digest


def checksum_v1(encoded_state: bytes) -> bytes:
    """The v1 checksum: sha256 of the state's whole encoding (states that are not
    objects, and rows written before v2)."""
    return _digest(encoded_state)


def checksum_of(state: Any) -> tuple[bytes, Members | None]:
    """The checksum a commit of ``state`` (already valid) stores, and its members when
    ``state`` is an object."""
    if type(state) is dict:
        members = Members.of(state)
        return members.checksum, members
    return checksum_v1(encode_trusted(state)), None


def matches(state: Any, stored: bytes) -> tuple[bool, Members | None]:
    """Whether ``state`` (rebuilt or given again) is the one ``stored`` is the checksum of,
    in either version; and its members when it is an object (for the head cache)."""
    digest, members = checksum_of(state)
    if digest == stored:
        return True, members
    if members is None:
        return False, None
    # A row written before v2: its checksum is of the whole encoding.
    return checksum_v1(encode_trusted(state)) == stored, members
