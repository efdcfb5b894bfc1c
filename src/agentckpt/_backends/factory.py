"""Pick and open a backend from a store URL.

``sqlite:///relative.db``, ``sqlite:////absolute/path.db`` and ``sqlite:///:memory:``
select SQLite; ``postgresql://...`` (or ``postgres://``) selects PostgreSQL, passing the
URL to libpq. agentckpt's own options ride in the query string and are removed before
that: ``schema`` (PostgreSQL schema, default ``agentckpt``), ``pool_min``, ``pool_max``,
``wait`` (seconds), ``prepare_threshold`` (``none`` behind PgBouncer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigurationError
from .base import AsyncBackend, Backend

_OWN_OPTIONS = ("schema", "pool_min", "pool_max", "wait", "prepare_threshold")


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
            if "pool_min" in own:
                options["min_size"] = int(own["pool_min"])
            if "pool_max" in own:
                options["max_size"] = int(own["pool_max"])
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
