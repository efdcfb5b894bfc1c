"""What a commit writes and how a state is rebuilt from stored steps; no I/O here.

The store feeds these functions what it read and sends what they return, so the logic of
snapshots, deltas, chains and checksums is the same for every backend, sync and async.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import is_, ne, truth
from typing import Any, NamedTuple
from uuid import UUID

import orjson

from agentckpt._core.checksums import Hasher, Members, checksum_v1, matches
from agentckpt._core.codec import (
    DEFAULT_LIMITS,
    ORJSON_STRICT,
    Limits,
    decode,
    decode_unguarded,
    encode,
    encode_trusted,
    exact_encoding,
    valid_container,
    validate,
)
from agentckpt._core.compression import unpack
from agentckpt._core.delta import (
    Patch,
    append_ops,
    apply,
    clone,
    diff,
    diff_into,
    escape_key,
)
from agentckpt._core.policy import SnapshotPolicy
from agentckpt._core.writes import Payload
from agentckpt.errors import CorruptDataError, InvalidValueError


class Head(NamedTuple):
    """What the writer knows of a run's newest step: the base of its next delta.

    ``state`` is owned by the store (decoded from the bytes it wrote or read), never the
    caller's object, which the caller may go on mutating. ``members`` (and
    ``parent_members``) are the encodings and digests of an object state's members, so
    the next commit encodes the new state once and diffs and hashes only what changed;
    None when the state is not an object or they were not computed yet. A named tuple
    (one is built per commit; see :class:`Plan`).
    """

    step: int | None
    version: int
    is_open: bool
    kind: str | None
    state: Any
    delta_bytes: int
    snapshot_step: int | None
    chain_bytes: int
    parent_step: int | None
    parent_state: Any
    members: Members | None = None
    parent_members: Members | None = None


EMPTY_HEAD = Head(None, 0, False, None, None, 0, None, 0, None, None)


class Plan(NamedTuple):
    """One step, ready to send; ``head`` is what the run's head will be once it commits.

    ``stored`` is the payload, packed when first read (by the backend that sends it,
    unless the store seals it first). A named tuple, not a frozen dataclass: one is
    built per commit, and a frozen dataclass of these 19 fields takes about 3 us to
    build (one ``object.__setattr__`` a field), a tuple under 1 us; it is as immutable.
    """

    run_id: UUID
    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    stored: Payload
    raw_bytes: int
    state_bytes: int
    checksum: bytes
    write_version: int
    expected_step: int | None
    expected_version: int
    snapshot_step: int
    chain_bytes: int
    prune_below: int | None
    seal_step: int | None
    head: Head


def _segments(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def _keys_ok(container: dict[Any, Any]) -> bool:
    for key in container:
        if type(key) is not str:
            return False
        if not key.isascii():
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def validate_patch(patch: list[dict[str, Any]], state: Any, limits: Limits) -> None:
    """Validate only what a delta brings into ``state``: O(new content), not O(state).

    The rest of the state is the previous state, validated when it was committed. An
    op's value is checked with the depth left at its location; a new key is checked
    with the keys of the object it joins (the key's own type is not in the pointer).
    """
    for op in patch:
        if op["op"] == "remove":
            continue
        path = op["path"]
        segments = _segments(path)
        depth = len(segments)
        value = op["value"]
        try:
            if type(value) is dict or type(value) is list:
                remaining = limits.max_depth - depth
                if remaining < 1:
                    raise InvalidValueError(path, "too deep")
                if not valid_container(value, remaining):
                    # Says what is wrong, relative to the value (the except names it).
                    validate(value, limits=Limits(max_depth=remaining, max_bytes=limits.max_bytes))
            else:
                validate(value, limits=limits)
        except InvalidValueError:
            # Something new is bad: the whole-state walk reports it with its full path
            # and the limit as configured (the relative check above knows neither).
            validate(state, limits=limits)
            raise
        if op["op"] == "add" and segments:
            parent: Any = state
            for segment in segments[:-1]:
                parent = parent[int(segment)] if type(parent) is list else parent[segment]
            if type(parent) is dict and not _keys_ok(parent):
                parent_path = path.rsplit("/", 1)[0]
                validate(parent, limits=limits, path=parent_path)


# Strict like encode_trusted's fast path; a TypeError sends the commit to the general path.


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, None, ORJSON_STRICT)


_orjson_dumps = orjson.dumps  # _dumps without its frame, in a loop over items


class _Delta(NamedTuple):
    """A delta and the new state's encoding: ``full``, or None when ``members`` builds it
    (only a snapshot needs those bytes; their size is known without them). A named
    tuple: one is built per commit (see :class:`Plan`).

    ``patch`` holds the ops still to validate; ``raw``, when set, is the encoding of the
    whole delta, which then also holds ops built from checked bytes (see
    :func:`_replace_op` and :func:`_append_hinted`) that ``patch`` does not list.
    """

    patch: Patch
    full: bytes | None
    size: int
    members: Members | None
    owned: Any
    raw: bytes | None = None

    def encoding(self) -> bytes:
        """The new state's whole encoding."""
        if self.full is not None:
            return self.full
        assert self.members is not None
        return self.members.encoding()


def _member_delta(
    base: Any,
    base_members: Members | None,
    state: Any,
    prefix_hint: tuple[str, int] | None,
    limits: Limits = DEFAULT_LIMITS,
    changed: Sequence[int] | None = None,
    encoded: Sequence[bytes] | None = None,
) -> _Delta | None:
    """The delta of an object state whose keys are its base's, in the same order, that
    encodes, diffs and hashes only the members that changed.

    Members equal by ``==`` (at C speed) are then checked strictly all at once: their
    values, encoded together as one array, must give the bytes their old encodings
    give, which tells ``1`` from ``1.0``, ``-0.0`` from ``0.0`` and key orders apart.
    Members that differ are encoded one by one: items appended to an array are found
    by its old encoding (but its ``]``) starting the new one and ``==`` of the old items
    (an encoding alone would take NaN for null); any other change is diffed.
    ``prefix_hint`` ``(key, n)`` is the caller's promise that ``state[key][:n]`` are the
    base's items, unchanged: only the items after them are encoded and compared.
    A member replaced by a scalar or a small container becomes one ``replace`` op,
    written from its encoding and checked at once (:func:`_replace_op`); only what is
    left (appends, large containers) is diffed, validated and applied op by op.
    ``changed``, when given, says which members differ (true) instead of ``==``: the
    run loop found them against its own copy of the last state. A member it calls
    unchanged is the base's very scalar or passes the strict check, and one it calls
    changed but that encodes like the old value sends the commit to the general path,
    so calling too many members changed costs time, never exactness. It must not call
    unchanged a member that differs by ``==``: the strict check compares encodings,
    and orjson writes a tuple as an array, NaN and the infinities as ``null`` and an
    enum as its value, which only ``==`` (or validation) tells from the base's value;
    such a member would keep the base's value instead of being refused. (An IntEnum or
    StrEnum member is ``==`` its value too: one where the base holds that value is
    taken for it, hint or not, and the base's value is stored.)
    ``encoded``, with ``changed`` only: the strict encodings (``ORJSON_STRICT``) of the
    members ``changed`` flags, in order, which the caller made from these very values
    (the run loop, for its own scans): they are not encoded again. Ignored unless the
    hint is taken and there is one a flagged member.
    Returns None when this does not apply; the general path then decides (and names
    errors).
    """
    if type(state) is not dict or type(base) is not dict:
        return None
    members = base_members if base_members is not None else Members.of(base)
    keys = members.keys
    if len(state) != len(keys) or list(state) != keys or list(base) != keys:
        return None
    hinted = None if prefix_hint is None else _hinted(base, members, state, prefix_hint)
    values = list(state.values())
    olds = list(base.values())
    count = len(values)
    try:
        differs = _flags(changed, count)
        if differs is None:
            differs = bytes(map(truth, map(ne, values, olds)))
            encoded = None
        # An unchanged str, number, bool or None that is the base's very object has the
        # base's encoding: only the other unchanged members need the strict check. (The
        # new head keeps the caller's scalars, below, and the run loop's copy of a state
        # shares them, so in a run only containers are checked again.) Whether the base's
        # member is a scalar is its cached encoding's first byte (``members.nested``).
        identical = bytes(map(is_, values, olds))
    except (TypeError, ValueError, RecursionError):
        return None  # an == that raises or is no bool (an array type, ...)
    checked = _unchecked(differs, identical, members.nested)
    if hinted is not None:
        differs, checked = _cleared(differs, hinted), _cleared(checked, hinted)
        encoded = None
    if encoded is not None and len(encoded) != differs.count(1):
        encoded = None
    given = None if encoded is None else iter(encoded)
    try:
        same_bytes = _dumps(list(compress(values, checked)))
    except (TypeError, ValueError, RecursionError):
        return None  # big integers, deep nesting, values that are not JSON
    old_values = members.values
    if same_bytes != b"[" + b",".join(compress(old_values, checked)) + b"]":
        return None  # equal by ==, not the same: the general path diffs them strictly
    patch: Patch = []
    changes: dict[int, tuple[bytes, Hasher | None]] = {}
    # Members replaced whole: their ops' encodings and their values for the new head.
    replaced_ops: list[bytes] = []
    replaced: list[tuple[str, Any]] = []
    # The hinted array's new items, when checked from their encoding: the head's copy.
    appended: tuple[str, list[Any]] | None = None
    try:
        if hinted is not None:
            appended = _append_hinted(
                members, hinted, base, state, patch, changes, replaced_ops, limits
            )
        for index in compress(range(count), differs):
            before, after = olds[index], values[index]
            new = _dumps(after) if given is None else next(given)
            old = old_values[index]
            if new == old:
                return None  # encodes like the old value, yet differs (NaN as null, ...)
            pointer = "/" + escape_key(keys[index])
            prefix = members.prefixes[index]
            if (
                prefix is not None
                and type(after) is list
                and len(new) > len(old)
                and (old == b"[]" or new[len(old) - 1] == 0x2C)  # ","
                and new.startswith(memoryview(old)[:-1])
                and before == after[: len(before)]
            ):
                patch.extend(append_ops(after[len(before) :], pointer))
                changes[index] = (new, prefix)
                continue
            op = _replace_op(pointer, after, new, limits, members.size())
            if op is None:
                diff_into(before, after, pointer, patch)
            else:
                replaced_ops.append(op)
                # The head's own containers around the caller's scalars (checked exact
                # by _replace_op), not a decode of ``new``: the next commit's == of this
                # member, while the caller keeps it, then meets the same strings and
                # numbers, and is told equal by identity, not by comparing their bytes.
                replaced.append((keys[index], after if _is_scalar(after) else clone(after)))
            changes[index] = (new, None)
    except (TypeError, ValueError, RecursionError):
        return None
    new_members = members.replaced(changes) if changes else members
    # The new head: the caller's scalars (immutable, and now the base's encodings) and
    # the store's own containers (the base's, then the changed ones copied). It starts
    # as the base: its containers, and the scalars the caller shares with it (the very
    # objects). An unchanged scalar that is another, equal object is the caller's
    # instead, so the next state, which shares the caller's, finds it identical; but
    # only a str, number, bool or None of its exact type (an IntEnum equal to the
    # base's int encodes like it, and the head holds only what was stored). A changed
    # member is replaced or patched below, from the base's value.
    owned = dict(base)
    own = _scalars_among(checked, members.nested)
    if own is not None:
        owned.update(
            (key, value)
            for key, value in zip(compress(keys, own), compress(values, own), strict=True)
            if type(value) in _SCALARS
        )
    if appended is not None:
        key, items = appended
        owned[key] = base[key] + items
    if patch:
        owned = apply(owned, patch)
    raw = None
    if replaced_ops:
        owned.update(replaced)
        if patch:
            replaced_ops.append(encode_trusted(patch)[1:-1])
        raw = b"[" + b",".join(replaced_ops) + b"]"
    return _Delta(patch, None, new_members.size(), new_members, owned, raw)


def _flags(changed: Sequence[int] | None, count: int) -> bytes | None:
    """The caller's ``changed`` hint as one byte a member (0 or 1); None when there is
    none or it is not ``count`` booleans (the plan then compares the members itself)."""
    if changed is None or len(changed) != count:
        return None
    try:
        flags = bytes(changed)
    except (TypeError, ValueError):
        return None
    # Anything but 0 and 1 (an int that is not a bool) would break the masks below.
    return flags if not flags.translate(None, b"\x00\x01") else None


def _unchecked(differs: bytes, identical: bytes, nested: bytes) -> bytes:
    """One byte a member, 1 where it needs the strict check: it does not differ and it is
    not the base's very scalar (identical to a base member that is not ``nested``).

    The masks hold one 0 or 1 byte a member; as integers they combine at C speed, in
    word-sized steps, where a ``map`` costs tens of nanoseconds a member.
    """
    count = len(differs)
    d = int.from_bytes(differs, "little")
    shared = int.from_bytes(identical, "little") & ~int.from_bytes(nested, "little")
    ones = int.from_bytes(b"\x01" * count, "little")
    return ((d | shared) ^ ones).to_bytes(count, "little")


def _scalars_among(checked: bytes, nested: bytes) -> bytes | None:
    """The members ``checked`` flags whose base is not ``nested``, as flags; None when
    there is none (in a run, after its first delta: the loop shares the head's scalars)."""
    scalars = int.from_bytes(checked, "little") & ~int.from_bytes(nested, "little")
    return scalars.to_bytes(len(checked), "little") if scalars else None


def _cleared(flags: bytes, index: int) -> bytes:
    """``flags`` with the byte at ``index`` set to 0."""
    return flags[:index] + b"\x00" + flags[index + 1 :]


# What a member replaced whole may be: a scalar (its ``replace`` op is what a diff gives)
# or a container this small (a diff of it would save little and cost a Python walk).
_REPLACE_BYTES = 2048
# ... and at most this fraction (1/n) of the whole state's encoding.
_REPLACE_SHARE = 4
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_scalar(value: Any) -> bool:
    return type(value) in _SCALARS


def _replace_op(
    pointer: str, value: Any, encoded: bytes, limits: Limits, state_size: int
) -> bytes | None:
    """The encoding of the op ``replace pointer by value``, or None when the member is
    to be diffed (a large container, or one that is much of the ``state_size`` bytes of
    the state: its op would be about the state's size, where a diff of a small change
    stays small and the step a delta) or checked op by op (it may be invalid).

    ``encoded`` is orjson's strict encoding of ``value``: it already refused lone
    surrogates, integers beyond 64 bits, subclasses of str, int, dict and list, and
    keys that are not str. What orjson writes anyway is checked here: NaN and the
    infinities (written as ``null``), tuples and enums (written as what they hold) and
    the depth, which for a container is its own walk (the depth left below a member
    is ``max_depth - 1``). The op names only a member, so it needs no key checks.
    """
    if _is_scalar(value):
        if encoded == b"null" and value is not None:
            return None  # NaN or an infinity: validate_patch says so, with its path
    elif (
        len(encoded) > _REPLACE_BYTES
        or len(encoded) * _REPLACE_SHARE > state_size
        or (type(value) is not dict and type(value) is not list)
        # The check at C speed from the encoding at hand; the walk when it cannot tell.
        or (
            exact_encoding(value, limits.max_depth - 1, encoded) is None
            and not valid_container(value, limits.max_depth - 1)
        )
    ):
        return None  # the general check names what is wrong, with its path and limit
    return b'{"op":"replace","path":' + _dumps(pointer) + b',"value":' + encoded + b"}"


def _append_hinted(
    members: Members,
    index: int,
    base: dict[str, Any],
    state: dict[str, Any],
    patch: Patch,
    changes: dict[int, tuple[bytes, Hasher | None]],
    checked_ops: list[bytes],
    limits: Limits,
) -> tuple[str, list[Any]] | None:
    """The ops and new encoding of the hinted array: only its new items are encoded.

    Items that pass the exact check from their strict encoding (as deep as they sit, two
    levels below the root) need neither a walk nor a copy by :func:`apply`: their ops
    go to ``checked_ops`` as bytes, and ``(key, items)`` is returned, the items decoded
    from those bytes (the new head's own copy). Otherwise their ops join ``patch``, to
    be validated (and named) and applied op by op, and None is returned.
    """
    key = members.keys[index]
    count = len(base[key])
    items = state[key][count:]
    if not items:
        return None
    old = members.values[index]
    parts = [_orjson_dumps(item, None, ORJSON_STRICT) for item in items]
    tail = b"[" + b",".join(parts) + b"]"
    # The array's encoding: the old one but its "]", then the new items.
    value = b"".join((memoryview(old)[:-1], b"," if count else b"", memoryview(tail)[1:]))
    changes[index] = (value, members.prefixes[index])
    pointer = "/" + escape_key(key)
    if exact_encoding(items, limits.max_depth - 1, tail) is None:
        patch.extend(append_ops(items, pointer))
        return None
    op = b'{"op":"add","path":' + _dumps(pointer + "/-") + b',"value":'
    checked_ops.extend(op + part + b"}" for part in parts)
    return key, orjson.loads(tail)


def _hinted(
    base: dict[str, Any], members: Members, state: dict[str, Any], hint: tuple[str, int] | None
) -> int | None:
    """The index of the member ``hint`` names, if the base agrees with it (an array of
    exactly ``n`` items, grown or kept in ``state``); else None."""
    if hint is None:
        return None
    key, count = hint
    before, after = base.get(key), state.get(key)
    if type(before) is not list or type(after) is not list:
        return None
    if len(before) != count or len(after) < count:
        return None
    index = members.keys.index(key)
    return index if members.prefixes[index] is not None else None


def _check_size(size: int, limits: Limits) -> None:
    if size > limits.max_bytes:
        raise InvalidValueError(
            "",
            f"encoded state is {size} bytes, over the limit of "
            f"{limits.max_bytes} bytes (Limits.max_bytes)",
        )


def _v1(encoded: bytes | None, state: Any) -> bytes:
    return checksum_v1(encoded if encoded is not None else encode_trusted(state))


def _general_delta(base: Any, state: Any, limits: Limits) -> _Delta:
    try:
        patch = diff(base, state)
    except (TypeError, ValueError, RecursionError):
        # diff sizes its ops by encoding them, which fails on a value that cannot be
        # stored; validating the whole state names that value and its path.
        validate(state, limits=limits)
        raise
    validate_patch(patch, state, limits)
    full = encode_trusted(state)
    members = Members.of(state) if type(state) is dict else None
    return _Delta(patch, full, len(full), members, None)


def checksum(state: Any, *, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The checksum stored with a step of ``state`` (validated here): v2 for an object,
    sha256 of the encoding otherwise (see :mod:`agentckpt._core.checksums`)."""
    encoded = encode(state, limits=limits)
    if type(state) is dict:
        return Members.of(state).checksum
    return checksum_v1(encoded)


def checksum_matches(state: Any, stored: bytes, *, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether ``state`` (validated here) is the state ``stored`` is the checksum of."""
    encode(state, limits=limits)
    return matches(state, stored)[0]


def plan_commit(
    run_id: UUID,
    head: Head,
    state: Any,
    *,
    step: int,
    keep_open: bool,
    policy: SnapshotPolicy,
    limits: Limits = DEFAULT_LIMITS,
    prefix_hint: tuple[str, int] | None = None,
    changed: Sequence[int] | None = None,
    encoded: Sequence[bytes] | None = None,
) -> Plan:
    """Decide kind, payload and guard of a commit of ``state`` as ``step``.

    ``step`` is either after the head (a new step) or the head itself when the head is
    open (an overwrite). The caller has checked which. ``prefix_hint``: see
    :meth:`agentckpt.AsyncStore.commit`; ``changed``: which members differ from the
    base, when the caller knows (checked, see :func:`_member_delta`), and ``encoded``
    the flagged members' strict encodings, when it has them (see the same).
    """
    overwrite = head.step is not None and step == head.step
    if overwrite:
        base_step, base_state = head.parent_step, head.parent_state
        base_members = head.parent_members
        forced_snapshot = head.kind == "snapshot"
        snap_before = head.snapshot_step
        chain_before = head.chain_bytes - head.delta_bytes
        write_version = head.version + 1
        seal_step = None
        changed = encoded = None  # said of the head, not of its parent, this commit's base
    else:
        base_step, base_state = head.step, head.state
        base_members = head.members
        forced_snapshot = head.step is None
        snap_before = head.snapshot_step
        chain_before = head.chain_bytes
        write_version = 1
        seal_step = head.step if head.is_open else None

    kind = "snapshot"
    patch = None
    owned: Any = None
    fast = None
    # The whole encoding, for the v1 checksum of a state that is not an object.
    v1_source: bytes | None = None
    if base_step is not None:
        # Also for a snapshot forced by an open snapshot head: the delta against its
        # parent validates only what changed, and gives the members.
        fast = _member_delta(base_state, base_members, state, prefix_hint, limits, changed, encoded)
        if fast is not None and fast.patch:
            validate_patch(fast.patch, state, limits)
    if forced_snapshot and fast is not None:
        _check_size(fast.size, limits)
        raw = fast.encoding()
        state_bytes, members, owned = fast.size, fast.members, fast.owned
    elif not forced_snapshot and base_step is not None:
        delta = fast if fast is not None else _general_delta(base_state, state, limits)
        patch, state_bytes, members, owned = delta.patch, delta.size, delta.members, delta.owned
        _check_size(state_bytes, limits)
        # The delta holds parts of the validated state; the limits apply to states, and
        # a delta op nests its value up to two levels deeper than the state does.
        delta_raw = delta.raw if delta.raw is not None else encode_trusted(patch)
        since = None if snap_before is None else step - snap_before
        kind = policy.choose(
            steps_since_snapshot=since,
            chain_bytes=chain_before,
            delta_bytes=len(delta_raw),
            state_bytes=state_bytes,
        )
        raw = delta_raw if kind == "delta" else delta.encoding()
        if delta.full is not None:
            v1_source = delta.full
    else:
        raw = encode(state, limits=limits)
        state_bytes = len(raw)
        members = Members.of(state) if type(state) is dict else None
        owned = None
        v1_source = raw

    if kind == "snapshot":
        snapshot_step, chain_bytes, delta_bytes = step, 0, 0
        prune_below = step if policy.prune else None
    else:
        assert snap_before is not None
        snapshot_step, chain_bytes, delta_bytes = snap_before, chain_before + len(raw), len(raw)
        prune_below = None
    if seal_step is not None and prune_below is not None and seal_step < prune_below:
        seal_step = None  # the prune deletes that row; one statement must not touch it twice

    # The new head state is owned by the store: the base with the patch applied (apply
    # copies what it inserts), so later mutations of the caller's object cannot reach it.
    if owned is None:
        owned = decode(raw) if patch is None else apply(base_state, patch)
    # else: the delta's new head, computed (and checked against state) with it
    new_head = Head(
        step=step,
        version=write_version,
        is_open=keep_open,
        kind=kind,
        state=owned,
        delta_bytes=delta_bytes,
        snapshot_step=snapshot_step,
        chain_bytes=chain_bytes,
        parent_step=base_step,
        parent_state=base_state if keep_open else None,
        members=members,
        parent_members=base_members if keep_open else None,
    )
    return Plan(
        run_id=run_id,
        step=step,
        parent_step=base_step,
        kind=kind,
        is_open=keep_open,
        stored=Payload.of(raw),
        raw_bytes=len(raw),
        state_bytes=state_bytes,
        checksum=members.checksum if members is not None else _v1(v1_source, state),
        write_version=write_version,
        expected_step=head.step,
        expected_version=head.version,
        snapshot_step=snapshot_step,
        chain_bytes=chain_bytes,
        prune_below=prune_below,
        seal_step=seal_step,
        head=new_head,
    )


def decode_row(row: dict[str, Any], *, where: str, exact: bool = True) -> Any:
    """A step row's document (a snapshot's state or a delta's patch); errors name ``where``.

    ``exact=False`` reads it without the codec's guard for integers beyond 64 bits (see
    :func:`~agentckpt._core.codec.decode_unguarded`): for a rebuild that is verified.
    """
    raw = unpack(row["codec"], bytes(row["payload"]), where=where)
    try:
        return decode(raw) if exact else decode_unguarded(raw)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{where}: {exc}") from exc


def _apply_row(
    state: Any, row: dict[str, Any], *, where: str, in_place: bool, exact: bool = True
) -> Any:
    """The state after ``row``: its snapshot, or its delta applied to ``state``."""
    document = decode_row(row, where=where, exact=exact)
    if row["kind"] == "snapshot":
        return document
    try:
        # The delta was decoded just now and is dropped after: its values need no copy.
        return apply(state, document, in_place=in_place, consume=True)
    except ValueError as exc:
        raise CorruptDataError(f"{where}: delta does not apply: {exc}") from exc


def verify_state(state: Any, stored: Any, *, where: str) -> Members | None:
    """Check a rebuilt state against its row's checksum (either version); its members.

    No validation: the state was validated when written, possibly under other limits.
    """
    ok, members = matches(state, bytes(stored))
    if not ok:
        raise CorruptDataError(f"{where}: rebuilt state does not match its checksum")
    return members


def _verify(state: Any, row: dict[str, Any], *, where: str) -> None:
    verify_state(state, row["checksum"], where=where)


def replay(run_id: UUID, rows: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Every kept step's state, in step order: ``(row, state)`` for each row.

    ``rows`` are a run's kept steps with their payloads, in step order, starting at a
    snapshot. Each state is checked against its row's checksum, and each delta must
    follow the step before it, so a corrupt row, a missing step or a delta that does not
    reproduce its state raises :class:`CorruptDataError` naming the step. Consecutive
    states share unchanged parts: treat them as read-only.
    """
    state: Any = None
    previous: int | None = None
    for row in rows:
        where = f"run {run_id} step {row['step']}"
        if row["kind"] != "snapshot" and (previous is None or row["parent_step"] != previous):
            raise CorruptDataError(
                f"{where}: delta against step {row['parent_step']}, which is not kept"
            )
        state = _apply_row(state, row, where=where, in_place=False)
        _verify(state, row, where=where)
        previous = row["step"]
        yield row, state


def rebuild(run_id: UUID, rows: Sequence[dict[str, Any]], *, verify: bool = True) -> Head:
    """Rebuild the state of the last row from a snapshot row and the delta rows after it.

    ``rows`` come from the ``load_chain`` query, in step order. With ``verify`` the
    result is checked against the stored checksum, which catches corruption and any
    delta that does not reproduce the state it was made from.
    """
    if not rows:
        return EMPTY_HEAD
    first = rows[0]
    if first["kind"] != "snapshot":
        raise CorruptDataError(f"run {run_id} step {first['step']}: chain has no snapshot")
    last = rows[-1]
    if verify and not (last["is_open"] and last["kind"] == "delta"):
        # The checksum proves the state exact, so the documents are read without the
        # codec's scan for integers beyond 64 bits (a pass over every payload's bytes):
        # one orjson would read as a float makes the state's encoding, so its checksum,
        # differ. Then (or on any corruption) the exact rebuild below decides, and names
        # the error. Not when the head is an open delta: the parent state it keeps is
        # not what the checksum covers.
        try:
            return _rebuild(run_id, rows, verify=True, exact=False)
        except CorruptDataError:
            pass
    return _rebuild(run_id, rows, verify=verify, exact=True)


class _Unread:
    """The state of a head whose owner handed its rebuilt state over (see :func:`hand_over`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD: Any = _Unread()
"""A cached head's ``state`` not decoded yet: :func:`ready` decodes it from its members."""


def hand_over(head: Head) -> tuple[Any, Head]:
    """A rebuilt head's state for the caller to own, and the head for the cache.

    The caller gets the rebuilt state itself and the cached head keeps only its
    members' encodings (exact bytes computed for the checksum): its own state is
    decoded from them by :func:`ready` when a commit needs it as its base, so a
    resume that is not followed by a commit builds one copy of the state, not two.
    When the head has no members (not verified, or not an object state) or keeps an
    open delta's parent (which shares parts with the state), the caller gets a copy.
    """
    members = head.members
    if members is not None and head.parent_state is None:
        return head.state, head._replace(state=UNREAD)
    encoded = members.encoding() if members is not None else encode_trusted(head.state)
    return decode(encoded), head


def ready(head: Head) -> Head:
    """``head`` with its state, decoded from its members if :func:`hand_over` left it
    unread; ``head`` itself otherwise."""
    if head.state is not UNREAD:
        return head
    assert head.members is not None
    return head._replace(state=decode(head.members.encoding()))


def _rebuild(run_id: UUID, rows: Sequence[dict[str, Any]], *, verify: bool, exact: bool) -> Head:
    first, last = rows[0], rows[-1]
    state: Any = None
    for row in rows[:-1]:
        where = f"run {run_id} step {row['step']}"
        state = _apply_row(state, row, where=where, in_place=True, exact=exact)
    # The parent stays intact when the head is open: it is the base of its next rewrite.
    open_delta = bool(last["is_open"]) and last["kind"] == "delta"
    parent_state = state if open_delta else None
    where = f"run {run_id} step {last['step']}"
    state = _apply_row(state, last, where=where, in_place=not open_delta, exact=exact)
    members = verify_state(state, last["checksum"], where=where) if verify else None
    chain_bytes = sum(row["raw_bytes"] for row in rows[1:])
    return Head(
        step=last["step"],
        version=last["write_version"],
        is_open=bool(last["is_open"]),
        kind=last["kind"],
        state=state,
        delta_bytes=last["raw_bytes"] if last["kind"] == "delta" else 0,
        snapshot_step=first["step"],
        chain_bytes=chain_bytes,
        parent_step=last["parent_step"],
        parent_state=parent_state,
        members=members,
    )


__all__ = [
    "EMPTY_HEAD",
    "UNREAD",
    "Head",
    "Plan",
    "checksum",
    "checksum_matches",
    "decode_row",
    "hand_over",
    "plan_commit",
    "ready",
    "rebuild",
    "replay",
    "verify_state",
]
