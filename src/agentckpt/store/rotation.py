# GENERATED from rotation_async.py by scripts/unasync.py; do not edit.
"""Key rotation and key usage (async source of ``rotation.py``): ``agentckpt keys``.

:func:`rotate_async` re-wraps every data key under the provider's current KEK (cheap:
one row per data key, no payload is touched). With ``reencrypt``, it then moves every
sealed value to a fresh data key: the old data keys become ``retiring`` (still readable),
each value is opened and sealed again and written back with a compare-and-swap on the
bytes it read, page by page, and once no value is left under a retiring key those keys
are ``retired``. Every write is one row in its own transaction, so a rotation killed at
any point leaves each value whole, old or new, and running it again carries on (values
already under the new data key are skipped). Values written in clear, before the store
was encrypted, are sealed too. :func:`key_usage_async` counts the values
under each data key by reading only their headers (no key needed).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentckpt.crypto.keyring import ACTIVE, RETIRED, RETIRING, DataKey, Keyring
from agentckpt.crypto.sealed import is_sealed, read_header
from agentckpt.crypto.sealing import (
    BLOB,
    CONFIG,
    EFFECT,
    HISTORY,
    METADATA,
    SEALED,
    STEP,
    is_sealed_codec,
)
from agentckpt.crypto.sealing import METADATA_PREFIX as PREFIX
from agentckpt.errors import ConfigurationError
from agentckpt.store import queries
from agentckpt.store.keys import KeyTable
from agentckpt.store.store import Store

# Rows read and rewritten per page.
DEFAULT_BATCH = 500

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class _Table:
    """One table's sealed column: its page and compare-and-swap queries."""

    name: str
    page: str
    reseal: str
    kind: str
    column: str
    keys: tuple[str, ...]  # the primary key after run_id


_TABLES = (
    _Table("steps", queries.ROTATION_STEPS_PAGE, queries.RESEAL_STEP, STEP, "payload", ("step",)),
    _Table("blobs", queries.ROTATION_BLOBS_PAGE, queries.RESEAL_BLOB, BLOB, "data", ("digest",)),
    _Table(
        "history",
        queries.ROTATION_HISTORY_PAGE,
        queries.RESEAL_HISTORY,
        HISTORY,
        "payload",
        ("seq",),
    ),
    _Table(
        "effects",
        queries.ROTATION_EFFECTS_PAGE,
        queries.RESEAL_EFFECT,
        EFFECT,
        "payload",
        ("step", "key"),
    ),
)


@dataclass(slots=True)
class RotationReport:
    """What a rotation did."""

    rewrapped: list[tuple[str, str]] = field(default_factory=list)  # (data key, old KEK)
    target: str | None = None  # the data key values were moved to (--reencrypt)
    resealed: dict[str, int] = field(default_factory=dict)  # values rewritten per table
    retired: list[str] = field(default_factory=list)
    still_in_use: dict[str, int] = field(default_factory=dict)  # retiring key -> values


def _after(table: _Table, row: dict[str, Any] | None) -> dict[str, Any]:
    if row is None:
        return {"after_run": None, "after": None, "after_key": None}
    return {
        "after_run": row["run_id"],
        "after": row[table.keys[0]],
        "after_key": row[table.keys[1]] if len(table.keys) > 1 else None,
    }


def _pages(store: Store, table: _Table, batch: int) -> Any:
    last: dict[str, Any] | None = None
    while True:
        params = {**_after(table, last), "limit": batch}
        if len(table.keys) == 1:
            params.pop("after_key")
        rows = store.backend.read(table.page, params)
        if not rows:
            return
        yield rows
        last = rows[-1]


def _run_pages(store: Store, batch: int) -> Any:
    after = None
    while True:
        rows = store.backend.read(queries.RUNS_PAGE, {"after_run": after, "limit": batch})
        if not rows:
            return
        yield rows
        after = rows[-1]["run_id"]


def _metadata_values(text: Any) -> dict[str, Any]:
    if text is None:
        return {}
    value = orjson.loads(text) if isinstance(text, str | bytes) else text
    return value if isinstance(value, dict) else {}


def _sealed_metadata(value: Any) -> bytes | None:
    if isinstance(value, str) and value.startswith(PREFIX):
        return base64.b64decode(value[len(PREFIX) :])
    return None


def key_usage(store: Store, *, batch: int = DEFAULT_BATCH) -> dict[str, dict[str, int]]:
    """Values sealed under each data key, by table (``runs`` counts config and metadata
    values); read from the values' headers, so no key is needed."""
    usage: dict[str, dict[str, int]] = {}

    def count(key_id: str, table: str) -> None:
        per_table = usage.setdefault(key_id, {})
        per_table[table] = per_table.get(table, 0) + 1

    for table in _TABLES:
        for rows in _pages(store, table, batch):
            for row in rows:
                if not is_sealed_codec(row["codec"]):
                    continue
                where = f"run {row['run_id']} {table.name}"
                count(read_header(bytes(row[table.column]), where=where).key_id, table.name)
    for rows in _run_pages(store, batch):
        for row in rows:
            where = f"run {row['run_id']}"
            if is_sealed(bytes(row["config"])):
                count(read_header(bytes(row["config"]), where=where).key_id, "runs")
            for value in _metadata_values(row["metadata"]).values():
                sealed = _sealed_metadata(value)
                if sealed is not None:
                    count(read_header(sealed, where=where).key_id, "runs")
    return usage


def _reseal_table(
    store: Store, keyring: Keyring, table: _Table, target: str, batch: int, progress: Progress
) -> int:
    scanned = resealed = 0
    for rows in _pages(store, table, batch):
        for row in rows:
            scanned += 1
            old, codec = bytes(row[table.column]), row["codec"]
            if is_sealed_codec(codec):
                if keyring.key_id_of(old) == target:
                    continue
                plain = keyring.open(table.kind, old, run_id=row["run_id"], where=table.name)
            else:  # written before the store was encrypted: sealed now
                plain, codec = old, codec + SEALED
            params = {name: row[name] for name in ("run_id", *table.keys)}
            new = keyring.seal(table.kind, plain, key_id=target)
            change = {**params, "old": old, "new": new, "codec": codec}
            if store.backend.write(table.reseal, change):
                resealed += 1
        progress(table.name, scanned, resealed)
    return resealed


def _reseal_metadata(keyring: Keyring, text: Any, target: str, *, seal_clear: bool) -> str | None:
    """The metadata with its values under ``target`` (clear ones sealed if
    ``seal_clear``), or None when nothing changes."""
    values = _metadata_values(text)
    changed = False
    for name, value in values.items():
        sealed = _sealed_metadata(value)
        if sealed is None:
            if not seal_clear:
                continue
            plain = orjson.dumps(value)
        elif keyring.key_id_of(sealed) == target:
            continue
        else:
            plain = keyring.open(METADATA, sealed, run_id=None, where=f"metadata {name!r}")
        values[name] = PREFIX + base64.b64encode(
            keyring.seal(METADATA, plain, key_id=target)
        ).decode("ascii")
        changed = True
    return orjson.dumps(values).decode() if changed else None


def _reseal_runs(
    store: Store, keyring: Keyring, target: str, batch: int, progress: Progress
) -> int:
    scanned = resealed = 0
    for rows in _run_pages(store, batch):
        for row in rows:
            scanned += 1
            rid = row["run_id"]
            config = bytes(row["config"])
            if not is_sealed(config) or keyring.key_id_of(config) != target:
                clear = not is_sealed(config)
                plain = (
                    config if clear else keyring.open(CONFIG, config, run_id=rid, where="config")
                )
                new = keyring.seal(CONFIG, plain, key_id=target)
                params = {"run_id": rid, "old": config, "new": new}
                if store.backend.write(queries.RESEAL_RUN_CONFIG, params):
                    resealed += 1
            text = row["metadata"]
            new_text = _reseal_metadata(keyring, text, target, seal_clear=store.sealing.metadata)
            if new_text is not None:
                params = {"run_id": rid, "old": text, "new": new_text}
                if store.backend.write(queries.RESEAL_RUN_METADATA, params):
                    resealed += 1
        progress("runs", scanned, resealed)
    return resealed


def _target(table: KeyTable, keyring: Keyring) -> str:
    """The data key to move values to, every other one made ``retiring``.

    A fresh data key (the one this process made on opening the store, if it did),
    unless a rotation is under way (some keys already retiring): then its target, the
    active key, is carried on with.
    """
    keys = table.load()
    if any(k.state == RETIRING for k in keys) and keyring.active is not None:
        target = keyring.active
    elif keyring.made is not None and keyring.made == keyring.active:
        target = keyring.made
    else:
        target = (table.new_active(keyring)).key_id
    for key in keys:
        if key.state == ACTIVE and key.key_id != target:
            table.set_state(key.key_id, RETIRING, old_state=ACTIVE)
    table.refresh(keyring)
    return target


def rotate(
    store: Store,
    *,
    reencrypt: bool = False,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> RotationReport:
    """Re-wrap the data keys under the current KEK; with ``reencrypt``, move every value
    to a new data key and retire the old ones (see the module docstring)."""
    keyring = store.sealing.keyring
    if keyring is None:
        raise ConfigurationError("key rotation needs the store opened with encryption=")
    table = KeyTable(store.backend)
    report = RotationReport(rewrapped=table.rewrap_all(keyring))
    if not reencrypt:
        return report
    report.target = _target(table, keyring)
    tell = progress or (lambda table, scanned, resealed: None)
    for each in _TABLES:
        report.resealed[each.name] = _reseal_table(store, keyring, each, report.target, batch, tell)
    report.resealed["runs"] = _reseal_runs(store, keyring, report.target, batch, tell)
    usage = key_usage(store, batch=batch)
    for key in table.load():
        if key.state != RETIRING:
            continue
        left = sum(usage.get(key.key_id, {}).values())
        if left:
            report.still_in_use[key.key_id] = left
        elif table.set_state(key.key_id, RETIRED, old_state=RETIRING):
            report.retired.append(key.key_id)
    return report


def describe_keys(keys: list[DataKey], usage: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """One entry per data key for ``keys status``: ids, KEK, cipher, state, value counts
    (never key material, wrapped or not)."""
    return [
        {
            "data_key": key.key_id,
            "kek": key.kek_id,
            "cipher": key.cipher,
            "state": key.state,
            "values": sum(usage.get(key.key_id, {}).values()),
            "by_table": dict(sorted(usage.get(key.key_id, {}).items())),
        }
        for key in keys
    ]
