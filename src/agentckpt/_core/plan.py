"""What a commit writes and how a state is rebuilt from stored steps; no I/O here.

The store feeds these functions what it read and sends what they return, so the logic of
snapshots, deltas, chains and checksums is the same for every backend, sync and async.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentckpt._core.codec import DEFAULT_LIMITS, Limits, decode, encode, encode_trusted, validate
from agentckpt._core.compression import pack, unpack
from agentckpt._core.delta import apply, diff
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import CorruptDataError, InvalidValueError


@dataclass(frozen=True, slots=True)
class Head:
    """What the writer knows of a run's newest step: the base of its next delta.

    ``state`` is owned by the store (decoded from the bytes it wrote or read), never the
    caller's object, which the caller may go on mutating.
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


EMPTY_HEAD = Head(None, 0, False, None, None, 0, None, 0, None, None)


@dataclass(frozen=True, slots=True)
class Plan:
    """One step, ready to send; ``head`` is what the run's head will be once it commits."""

    run_id: UUID
    step: int
    parent_step: int | None
    kind: str
    is_open: bool
    codec: str
    payload: bytes
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


def checksum(encoded_state: bytes) -> bytes:
    """The checksum stored with each step: sha256 of the state's exact encoding."""
    return hashlib.sha256(encoded_state).digest()


def plan_commit(
    run_id: UUID,
    head: Head,
    state: Any,
    *,
    step: int,
    keep_open: bool,
    policy: SnapshotPolicy,
    limits: Limits = DEFAULT_LIMITS,
) -> Plan:
    """Decide kind, payload and guard of a commit of ``state`` as ``step``.

    ``step`` is either after the head (a new step) or the head itself when the head is
    open (an overwrite). The caller has checked which.
    """
    overwrite = head.step is not None and step == head.step
    if overwrite:
        base_step, base_state = head.parent_step, head.parent_state
        forced_snapshot = head.kind == "snapshot"
        snap_before = head.snapshot_step
        chain_before = head.chain_bytes - head.delta_bytes
        write_version = head.version + 1
        seal_step = None
    else:
        base_step, base_state = head.step, head.state
        forced_snapshot = head.step is None
        snap_before = head.snapshot_step
        chain_before = head.chain_bytes
        write_version = 1
        seal_step = head.step if head.is_open else None

    kind = "snapshot"
    patch = None
    if not forced_snapshot and base_step is not None:
        try:
            patch = diff(base_state, state)
        except (TypeError, ValueError, RecursionError):
            # diff sizes its ops by encoding them, which fails on a value that cannot be
            # stored; validating the whole state names that value and its path.
            validate(state, limits=limits)
            raise
        validate_patch(patch, state, limits)
        full = encode_trusted(state)
        if len(full) > limits.max_bytes:
            raise InvalidValueError(
                "",
                f"encoded state is {len(full)} bytes, over the limit of "
                f"{limits.max_bytes} bytes (Limits.max_bytes)",
            )
        # The delta holds parts of the validated state; the limits apply to states, and
        # a delta op nests its value up to two levels deeper than the state does.
        delta_raw = encode_trusted(patch)
        since = None if snap_before is None else step - snap_before
        kind = policy.choose(
            steps_since_snapshot=since,
            chain_bytes=chain_before,
            delta_bytes=len(delta_raw),
            state_bytes=len(full),
        )
        raw = delta_raw if kind == "delta" else full
    else:
        full = raw = encode(state, limits=limits)

    if kind == "snapshot":
        snapshot_step, chain_bytes, delta_bytes = step, 0, 0
        prune_below = step if policy.prune else None
    else:
        assert snap_before is not None
        snapshot_step, chain_bytes, delta_bytes = snap_before, chain_before + len(raw), len(raw)
        prune_below = None
    if seal_step is not None and prune_below is not None and seal_step < prune_below:
        seal_step = None  # the prune deletes that row; one statement must not touch it twice

    codec, payload = pack(raw)
    # The new head state is owned by the store: the base with the patch applied (apply
    # copies what it inserts), so later mutations of the caller's object cannot reach it.
    owned = decode(full) if patch is None else apply(base_state, patch)
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
    )
    return Plan(
        run_id=run_id,
        step=step,
        parent_step=base_step,
        kind=kind,
        is_open=keep_open,
        codec=codec,
        payload=payload,
        raw_bytes=len(raw),
        state_bytes=len(full),
        checksum=checksum(full),
        write_version=write_version,
        expected_step=head.step,
        expected_version=head.version,
        snapshot_step=snapshot_step,
        chain_bytes=chain_bytes,
        prune_below=prune_below,
        seal_step=seal_step,
        head=new_head,
    )


def decode_row(row: dict[str, Any], *, where: str) -> Any:
    """A step row's document (a snapshot's state or a delta's patch); errors name ``where``."""
    raw = unpack(row["codec"], bytes(row["payload"]), where=where)
    try:
        return decode(raw)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{where}: {exc}") from exc


def _apply_row(state: Any, row: dict[str, Any], *, where: str, in_place: bool) -> Any:
    """The state after ``row``: its snapshot, or its delta applied to ``state``."""
    document = decode_row(row, where=where)
    if row["kind"] == "snapshot":
        return document
    try:
        return apply(state, document, in_place=in_place)
    except ValueError as exc:
        raise CorruptDataError(f"{where}: delta does not apply: {exc}") from exc


def _verify(state: Any, row: dict[str, Any], *, where: str) -> None:
    # encode_trusted: the state was validated when written, possibly under other limits.
    if checksum(encode_trusted(state)) != bytes(row["checksum"]):
        raise CorruptDataError(f"{where}: rebuilt state does not match its checksum")


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
    state: Any = None
    last = rows[-1]
    for row in rows[:-1]:
        state = _apply_row(state, row, where=f"run {run_id} step {row['step']}", in_place=True)
    # The parent stays intact when the head is open: it is the base of its next rewrite.
    open_delta = bool(last["is_open"]) and last["kind"] == "delta"
    parent_state = state if open_delta else None
    where = f"run {run_id} step {last['step']}"
    state = _apply_row(state, last, where=where, in_place=not open_delta)
    if verify:
        _verify(state, last, where=where)
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
    )


__all__ = [
    "EMPTY_HEAD",
    "Head",
    "Plan",
    "checksum",
    "decode_row",
    "plan_commit",
    "rebuild",
    "replay",
]
