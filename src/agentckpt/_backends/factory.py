"""Pick and open a backend from a store URL.

``sqlite:///relative.db``, ``sqlite:////absolute/path.db`` and ``sqlite:///:memory:``
select SQLite; ``postgresql://...`` (or ``postgres://``) selects PostgreSQL and passes
the URL to libpq exactly as written, minus agentckpt's own settings in its query string
(:mod:`agentckpt._backends.options` lists them). Every libpq form works: Unix sockets
(``postgresql:///db?host=/var/run/postgresql``), several hosts
(``postgresql://a:5432,b:5432/db`` or ``?host=a,b&port=p1,p2``), IPv6 literals,
percent-encoded passwords, ``options=-c ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit

from agentckpt._backends.base import AsyncBackend, Backend
from agentckpt._backends.options import (
    CommitOptions,
    PostgresOptions,
    SqliteOptions,
    known_settings,
    resolve_options,
)
from agentckpt.crypto.settings import split_settings
from agentckpt.errors import ConfigurationError

__all__ = ["Target", "open_backend", "open_backend_async", "parse_url"]


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed store URL: the dialect, where it points, and agentckpt's own settings."""

    dialect: str
    location: str  # the SQLite path, or the libpq URL without agentckpt's settings
    settings: dict[str, str]

    def resolve(
        self, keywords: dict[str, Any] | None = None
    ) -> tuple[PostgresOptions | SqliteOptions, CommitOptions]:
        """The typed settings: the URL's, overridden by ``keywords``, all checked."""
        return resolve_options(self.dialect, self.settings, keywords or {})


def _split_query(url: str, own: set[str] | None) -> tuple[str, dict[str, str]]:
    """The URL without the query parameters named in ``own``, and those parameters.

    The rest of the URL is kept character for character (urlunsplit would turn
    ``postgresql:///db`` into ``postgresql:/db``, which libpq cannot parse). ``own`` None:
    every parameter is agentckpt's.
    """
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    kept, settings = [], {}
    for part in query.split("&"):
        key = unquote_plus(part.partition("=")[0])
        if own is None or key in own:
            settings[key] = dict(parse_qsl(part, keep_blank_values=True)).get(key, "")
        elif part:
            kept.append(part)
    return base + ("?" + "&".join(kept) if kept else ""), settings


def parse_url(url: str) -> Target:
    """Split a store URL into dialect, location and agentckpt settings (checked)."""
    target = _parse(url)
    target.resolve()
    return target


def _parse(url: str) -> Target:
    if not isinstance(url, str):
        raise ConfigurationError(f"a store URL must be a str, not {type(url).__name__}")
    # The encryption settings are the store's (agentckpt.crypto.settings), not a driver's.
    url = split_settings(url)[0]
    scheme = url.partition(":")[0].lower()
    if scheme == "sqlite":
        # Every query parameter of a SQLite URL is an agentckpt setting: an unknown one
        # is an error (resolve() says so), not silently ignored.
        base, settings = _split_query(url, None)
        parts = urlsplit(base)
        if parts.netloc:
            raise ConfigurationError(
                f"SQLite URL {url!r} has a host; use sqlite:///relative.db or "
                "sqlite:////absolute/path.db"
            )
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise ConfigurationError(f"SQLite URL {url!r} names no file")
        return Target("sqlite", path, settings)
    if scheme in ("postgresql", "postgres"):
        location, settings = _split_query(url, set(known_settings("postgresql")))
        return Target("postgresql", location, settings)
    raise ConfigurationError(
        f"unsupported store URL {url!r}: use sqlite:///path.db or postgresql://..."
    )


def _resolve(
    url: str, keywords: dict[str, Any]
) -> tuple[Target, PostgresOptions | SqliteOptions, CommitOptions]:
    target = _parse(url)
    backend, commit = target.resolve(keywords)
    return target, backend, commit


def open_backend(url: str, **settings: Any) -> tuple[Backend, CommitOptions]:
    """Open a synchronous backend for ``url``; keyword settings override the URL's."""
    target, options, commit = _resolve(url, settings)
    if isinstance(options, SqliteOptions):
        from agentckpt._backends.sqlite import SqliteBackend

        return SqliteBackend(target.location, options), commit
    try:
        from agentckpt._backends.postgres import PostgresBackend
    except ImportError as exc:
        raise _missing_driver(exc) from exc
    return PostgresBackend.connect(target.location, options), commit


async def open_backend_async(url: str, **settings: Any) -> tuple[AsyncBackend, CommitOptions]:
    """Open an asynchronous backend for ``url``; keyword settings override the URL's."""
    target, options, commit = _resolve(url, settings)
    if isinstance(options, SqliteOptions):
        from agentckpt._backends.sqlite import SqliteBackend
        from agentckpt._backends.sqlite_worker import AsyncSqliteBackend

        return AsyncSqliteBackend(SqliteBackend(target.location, options)), commit
    try:
        from agentckpt._backends.postgres_async import AsyncPostgresBackend
    except ImportError as exc:
        raise _missing_driver(exc) from exc
    return await AsyncPostgresBackend.connect(target.location, options), commit


def _missing_driver(exc: ImportError) -> ConfigurationError:
    if isinstance(exc, ModuleNotFoundError):
        return ConfigurationError(
            f"PostgreSQL support is not installed ({exc.name or exc}): "
            "pip install 'agentckpt[postgres]' ('agentckpt[postgres-binary]' where libpq "
            "is not installed)"
        )
    # psycopg is there but found no implementation to load: plain psycopg (the
    # `postgres` extra) needs the system's libpq, which this machine lacks.
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
    return ConfigurationError(
        f"psycopg cannot load ({reason}): install libpq (Debian/Ubuntu: apt-get install "
        "libpq5), or pip install 'agentckpt[postgres-binary]' for psycopg's wheel with "
        "libpq bundled"
    )
