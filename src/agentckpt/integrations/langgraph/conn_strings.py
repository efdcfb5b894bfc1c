"""The connection strings LangGraph's savers take, as agentckpt store URLs; pure.

``PostgresSaver.from_conn_string`` takes a libpq URL (``postgresql://...``) or a
``key=value`` connection string; ``SqliteSaver.from_conn_string`` a file path or
``:memory:``. :func:`store_url` maps each to the store URL that ``Store.connect`` takes, so
``AgentckptSaver.from_conn_string`` opens what the user's LangGraph saver opened (the
agentckpt tables sit in the PostgreSQL schema ``agentckpt``, beside LangGraph's).
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote

from agentckpt.errors import ConfigurationError

__all__ = ["store_url"]

# A libpq keyword/value string starts with a keyword and "=" ("host=db dbname=app").
_KEYWORDS = re.compile(r"^\s*[A-Za-z_]+\s*=")
_URL_SCHEMES = ("postgresql://", "postgres://", "sqlite:")


def store_url(conn_string: str | os.PathLike[str]) -> str:
    """The agentckpt store URL for a LangGraph saver's connection string.

    - ``postgresql://...`` / ``postgres://...`` and ``sqlite:///...``: kept as written;
    - ``host=... dbname=...`` (libpq keywords): the same settings as a ``postgresql://`` URL;
    - anything else is a SQLite file path, as ``SqliteSaver`` takes it, or ``:memory:``.
    """
    text = os.fspath(conn_string)
    if not isinstance(text, str):
        raise ConfigurationError(f"a connection string must be a str, not {type(text).__name__}")
    if not text.strip():
        raise ConfigurationError("the connection string is empty: pass postgresql://... or a path")
    if text.lower().startswith(_URL_SCHEMES):
        return text
    if _KEYWORDS.match(text):
        return _keywords_url(text)
    if any(char in text for char in "?#"):
        raise ConfigurationError(
            f"SQLite path {text!r} contains '?' or '#', which a store URL cannot carry; "
            "rename the file or pass a sqlite:/// URL"
        )
    if text == ":memory:":
        return "sqlite:///:memory:"
    # sqlite:///relative.db, sqlite:////absolute.db: the path follows the third slash.
    return "sqlite:///" + text


def _keywords_url(text: str) -> str:
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict
    except ImportError as exc:  # pragma: no cover - psycopg comes with the postgres extra
        raise ConfigurationError(
            f"PostgreSQL support is not installed ({exc.name}): pip install 'agentckpt[postgres]'"
        ) from exc
    try:
        settings = conninfo_to_dict(text)
    except ProgrammingError as exc:  # libpq refused the string
        raise ConfigurationError(f"bad PostgreSQL connection string {text!r}: {exc}") from None
    query = "&".join(
        f"{quote(str(key), safe='')}={quote(str(value), safe='')}"
        for key, value in settings.items()
        if value is not None
    )
    return "postgresql://" + ("?" + query if query else "")
