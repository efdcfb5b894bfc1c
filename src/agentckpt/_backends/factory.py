"""Pick and open a backend from a store URL.

``sqlite:///relative.db``, ``sqlite:////absolute/path.db`` and ``sqlite:///:memory:``
select SQLite; ``postgresql://...`` (or ``postgres://``) selects PostgreSQL, passing the
URL to libpq. agentckpt's own options ride in the query string and are removed before
that: ``schema`` (PostgreSQL schema, default ``agentckpt``), ``pool_min``, ``pool_max``,
``wait`` (seconds), ``prepare_threshold`` (``none`` behind PgBouncer), ``group_commit``
(the most concurrent commits sent as one statement and transaction; 1 turns grouping
off) and ``commit_senders`` (how many such groups may be in flight at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigurationError
from .base import AsyncBackend, Backend

_OWN_OPTIONS = (
    "schema",
    "pool_min",
    "pool_max",
    "wait",
    "prepare_threshold",
    "group_commit",
    "commit_senders",
)
# Options that are positive integers, and the backend's name for each.
_COUNTS = {
    "pool_min": "min_size",
    "pool_max": "max_size",
    "group_commit": "group_commit",
    "commit_senders": "commit_senders",
}


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed store URL."""

    dialect: str
    location: str  # SQLite path, or the libpq URL without agentckpt's options
    options: dict[str, Any]


def parse_url(url: str) -> Target:
    """Split a store URL into dialect, location and agentckpt options."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise ConfigurationError(
                f"SQLite URL {url!r} has a host; use sqlite:///relative.db or "
                "sqlite:////absolute/path.db"
            )
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise ConfigurationError(f"SQLite URL {url!r} names no file")
        return Target("sqlite", path, {})
    if parts.scheme in ("postgresql", "postgres"):
        query = parse_qsl(parts.query, keep_blank_values=True)
        own = {k: v for k, v in query if k in _OWN_OPTIONS}
        rest = [(k, v) for k, v in query if k not in _OWN_OPTIONS]
        options: dict[str, Any] = {}
        try:
            if "schema" in own:
                options["schema"] = own["schema"]
            for name, option in _COUNTS.items():
                if name in own:
                    options[option] = _count(name, own[name])
            if "wait" in own:
                options["wait"] = float(own["wait"])
            if "prepare_threshold" in own:
                value = own["prepare_threshold"]
                options["prepare_threshold"] = None if value.lower() == "none" else int(value)
        except ValueError as exc:
            raise ConfigurationError(f"bad option in store URL {url!r}: {exc}") from exc
        location = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))
        return Target("postgresql", location, options)
    raise ConfigurationError(
        f"unsupported store URL {url!r}: use sqlite:///path.db or postgresql://..."
    )


def _count(name: str, text: str) -> int:
    value = int(text)
    if value < 1 and name != "pool_min":
        raise ValueError(f"{name}={text} must be at least 1")
    if value < 0:
        raise ValueError(f"{name}={text} must not be negative")
    return value


def open_backend(url: str, **options: Any) -> Backend:
    """Open a synchronous backend for ``url``; keyword options override URL options."""
    target = parse_url(url)
    if target.dialect == "sqlite":
        from .sqlite import SqliteBackend

        return SqliteBackend(target.location, **options)
    try:
        from .postgres_sync import PostgresBackend
    except ImportError as exc:
        raise _missing_driver(exc) from exc

    return PostgresBackend.connect(target.location, **(target.options | options))


async def open_async_backend(url: str, **options: Any) -> AsyncBackend:
    """Open an asynchronous backend for ``url``; keyword options override URL options."""
    target = parse_url(url)
    if target.dialect == "sqlite":
        from .sqlite import SqliteBackend
        from .sqlite_async import AsyncSqliteBackend

        return AsyncSqliteBackend(SqliteBackend(target.location, **options))
    try:
        from .postgres_async import AsyncPostgresBackend
    except ImportError as exc:
        raise _missing_driver(exc) from exc

    return await AsyncPostgresBackend.connect(target.location, **(target.options | options))


def _missing_driver(exc: ImportError) -> ConfigurationError:
    return ConfigurationError(
        f"PostgreSQL support is not installed ({exc.name or exc}): "
        "pip install 'agentckpt[postgres]'"
    )
