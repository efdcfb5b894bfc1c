"""A store's settings as typed values: one name per setting, in the URL and as a keyword.

``Store.connect("postgresql://...?pool_max=20")`` and ``Store.connect(url, pool_max=20)``
set the same field; keywords win over the URL. A setting the dialect does not have (for
example ``pool_max`` on a SQLite URL), a value of the wrong type or out of range, is a
:class:`~agentckpt.errors.ConfigurationError` naming the setting, before anything opens.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentckpt._compat.group_commit import MAX_WRITES
from agentckpt.errors import ConfigurationError
from agentckpt.tenancy.names import DEFAULT_TENANT, check_tenant

__all__ = [
    "CommitOptions",
    "PostgresOptions",
    "SqliteOptions",
    "resolve_options",
]

# How many concurrent commits one group commit sends at most (one statement and one
# transaction); 1 sends every commit alone.
DEFAULT_GROUP_COMMIT = MAX_WRITES
# Seconds a front door keeps retrying an unreachable or failing-over database.
DEFAULT_OUTAGE_LIMIT = 60.0
# A PostgreSQL schema name agentckpt can put in search_path without quoting.
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# The values of the distribute setting.
DISTRIBUTE = re.compile(r"^(auto|off)$")


def _count(minimum: int) -> dict[str, Any]:
    return {"kind": int, "minimum": minimum}


def _seconds(*, zero: bool = False) -> dict[str, Any]:
    return {"kind": float, "minimum": 0.0, "exclusive": not zero}


# A tenant name (agentckpt.tenancy.names): checked by check_tenant, with its own message.
_TENANT: dict[str, Any] = {"kind": str, "check": check_tenant}


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitOptions:
    """How commits are sent, and how long the store's users ride out an outage (both
    dialects).

    ``group_commit``: the most commits one statement and transaction carries (1: each
    alone). ``commit_senders`` (PostgreSQL): how many such groups may be in flight at
    once, each on a connection of its own; SQLite has one writer, so always 1.
    ``outage_limit``: seconds the run loop, conversations and the framework adapters keep
    retrying a call that failed with ``UnavailableError`` or ``OutcomeUnknownError``
    (the database is unreachable, failing over, frozen) before they give up and raise it
    (:class:`~agentckpt.store.outage_policy.OutagePolicy`).
    """

    group_commit: int = field(default=DEFAULT_GROUP_COMMIT, metadata=_count(1))
    commit_senders: int = field(default=2, metadata=_count(1))
    outage_limit: float = field(default=DEFAULT_OUTAGE_LIMIT, metadata=_seconds(zero=True))


@dataclass(frozen=True, kw_only=True, slots=True)
class PostgresOptions:
    """The PostgreSQL connection pool and schema.

    ``schema``: where agentckpt's tables live (created when migrating).
    ``pool_min``/``pool_max``: connections kept open / opened at most.
    ``wait``: seconds to wait for a free connection at each checkout.
    ``connect_wait``: seconds the first connection may keep trying a server that is
    unreachable or starting up; a URL that cannot work (a bad value, an unknown role or
    database, a refused password) fails at once, with the server's own reason.
    ``prepare_threshold``: psycopg's server-side prepare threshold; ``None`` (URL:
    ``none``) never prepares, as PgBouncer in transaction mode needs.
    ``deadline``: seconds one database call (a commit, a read, a write) may take. Past
    it the store cancels the statement on the server and, if the server does not answer
    the cancel within a second (a frozen server), cuts the connection; the call raises
    ``OutcomeUnknownError`` (a write) or ``UnavailableError`` (a read), the connection
    is discarded and the pool reconnects. Migrations have no deadline.
    ``reconnect_initial_delay``/``reconnect_max_delay``: the pool's pause before its
    second attempt to replace a lost connection, doubling up to the maximum; the
    defaults reconnect within about a second of a new primary accepting connections.
    ``tenant``: whose rows the store reads and writes; the store sets it at the start of
    every transaction, and row-level security binds the connection's role to it
    (``docs/security.md``).
    ``distribute``: ``auto`` distributes the tables by ``run_id`` when migrating a
    database with the ``citus`` extension; ``off`` leaves them as the migrations make
    them (distribute by hand). ``partitions``: 0, or N >= 2 to create the tables
    ``PARTITION BY HASH (run_id)`` with N partitions when migrating a fresh schema
    (:mod:`agentckpt._backends.distribution_async`).
    """

    schema: str = field(default="agentckpt", metadata={"kind": str, "pattern": SCHEMA_NAME})
    pool_min: int = field(default=1, metadata=_count(0))
    pool_max: int = field(default=10, metadata=_count(1))
    wait: float = field(default=30.0, metadata=_seconds())
    connect_wait: float = field(default=5.0, metadata=_seconds())
    prepare_threshold: int | None = field(
        default=5, metadata={"kind": int, "minimum": 0, "nullable": True}
    )
    deadline: float = field(default=15.0, metadata=_seconds())
    reconnect_initial_delay: float = field(default=0.1, metadata=_seconds())
    reconnect_max_delay: float = field(default=1.0, metadata=_seconds())
    tenant: str = field(default=DEFAULT_TENANT, metadata=_TENANT)
    distribute: str = field(default="auto", metadata={"kind": str, "pattern": DISTRIBUTE})
    partitions: int = field(default=0, metadata=_count(0))


@dataclass(frozen=True, kw_only=True, slots=True)
class SqliteOptions:
    """The SQLite file's lock wait: ``wait`` seconds for another writer's lock.

    ``tenant``: whose rows the store reads and writes (every query filters on it; on
    SQLite a convenience, not a security boundary).
    ``inline_limit`` (the async store): seconds its calls may hold the event loop, on
    average. While one run commits alone (its last two commits had no other run's in
    between), the async store runs its calls on the event loop's own thread, sparing the
    two hand-offs to the SQLite thread and back; when their moving average goes over
    this, the calls of the next ten seconds go to the thread. 0: every call on the thread.
    """

    wait: float = field(default=30.0, metadata=_seconds())
    inline_limit: float = field(default=0.005, metadata=_seconds(zero=True))
    tenant: str = field(default=DEFAULT_TENANT, metadata=_TENANT)


_DIALECT_OPTIONS: dict[str, type[PostgresOptions] | type[SqliteOptions]] = {
    "postgresql": PostgresOptions,
    "sqlite": SqliteOptions,
}
# Settings of CommitOptions that a dialect does not have.
_NOT_ON = {"sqlite": {"commit_senders"}}


def _names(cls: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def known_settings(dialect: str) -> list[str]:
    """The settings a store URL or ``Store.connect`` keyword may name for ``dialect``."""
    excluded = _NOT_ON.get(dialect, set())
    names = _names(_DIALECT_OPTIONS[dialect]) + _names(CommitOptions)
    return sorted(n for n in names if n not in excluded)


def _convert(name: str, value: Any, meta: Mapping[str, Any], *, from_url: bool) -> Any:
    kind = meta["kind"]
    if value is None or (from_url and meta.get("nullable") and str(value).lower() == "none"):
        if meta.get("nullable"):
            return None
        raise ConfigurationError(f"setting {name} must not be None")
    if from_url:
        try:
            value = kind(value)
        except ValueError:
            raise ConfigurationError(
                f"setting {name}={value!r} in the store URL is not a{'n' if kind is int else ''} "
                f"{kind.__name__}"
            ) from None
    elif kind is float and type(value) is int:
        value = float(value)
    elif type(value) is not kind:
        raise ConfigurationError(
            f"setting {name}={value!r} must be a{'n' if kind is int else ''} {kind.__name__}, "
            f"not {type(value).__name__}"
        )
    if kind is float and not math.isfinite(value):
        # NaN passes every comparison below; inf would wait forever.
        raise ConfigurationError(f"setting {name}={value!r} must be a finite number")
    if "minimum" in meta:
        low = meta["minimum"]
        if value < low or (meta.get("exclusive") and value == low):
            relation = "above" if meta.get("exclusive") else "at least"
            raise ConfigurationError(f"setting {name}={value!r} must be {relation} {low}")
    check = meta.get("check")
    if check is not None:
        check(value)
    pattern = meta.get("pattern")
    if pattern is not None and not pattern.match(value):
        raise ConfigurationError(
            f"setting {name}={value!r} must match {pattern.pattern} (lowercase, no quotes)"
        )
    return value


def _build(cls: type[Any], given: Mapping[str, tuple[Any, bool]]) -> Any:
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            value, from_url = given[f.name]
            values[f.name] = _convert(f.name, value, f.metadata, from_url=from_url)
    return cls(**values)


def resolve_options(
    dialect: str, url_settings: Mapping[str, str], keywords: Mapping[str, Any]
) -> tuple[PostgresOptions | SqliteOptions, CommitOptions]:
    """The typed settings of a store: the URL's, overridden by keywords, all checked."""
    known = set(known_settings(dialect))
    given: dict[str, tuple[Any, bool]] = {}
    for source, settings, from_url in (
        ("store URL", url_settings, True),
        ("keyword", keywords, False),
    ):
        for name, value in settings.items():
            if name not in known:
                raise ConfigurationError(
                    f"unknown {dialect} setting {name!r} ({source}); "
                    f"known settings: {', '.join(sorted(known))}"
                )
            given[name] = (value, from_url)
    backend = _build(_DIALECT_OPTIONS[dialect], given)
    commit = _build(CommitOptions, given)
    if dialect == "sqlite":
        commit = dataclasses.replace(commit, commit_senders=1)
    if isinstance(backend, PostgresOptions) and backend.pool_min > backend.pool_max:
        raise ConfigurationError(
            f"setting pool_min={backend.pool_min} must not exceed pool_max={backend.pool_max}"
        )
    if (
        isinstance(backend, PostgresOptions)
        and backend.reconnect_initial_delay > backend.reconnect_max_delay
    ):
        raise ConfigurationError(
            f"setting reconnect_initial_delay={backend.reconnect_initial_delay:g} must not "
            f"exceed reconnect_max_delay={backend.reconnect_max_delay:g}"
        )
    if isinstance(backend, PostgresOptions) and backend.partitions == 1:
        raise ConfigurationError(
            "setting partitions=1 would make one partition: use 0 (no partitions) or at least 2"
        )
    return backend, commit
