"""PostgreSQL store URLs in every form libpq takes, against a real server."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentckpt import ConfigurationError, Store, UnavailableError

SOCKET_DIR = Path("/var/run/postgresql")


def _parts(pg_url: str) -> tuple[str, str]:
    """The database and the schema setting of the test's URL."""
    parts = urlsplit(pg_url)
    return parts.path.lstrip("/"), parts.query


@pytest.mark.skipif(not SOCKET_DIR.is_dir(), reason="no local PostgreSQL socket directory")
def test_a_unix_socket_url_connects(pg_url: str) -> None:
    if not any(SOCKET_DIR.glob(".s.PGSQL.*")):
        pytest.skip("the local server listens on no Unix socket here")
    database, query = _parts(pg_url)
    url = f"postgresql:///{database}?host={SOCKET_DIR}&{query}&wait=5"
    with Store.connect(url) as store:
        run = store.create_run()
        assert store.commit(run.run_id, {"via": "socket"}).step == 1


def test_the_query_string_multi_host_form_connects(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    host, port = parts.hostname, parts.port or 5432
    database, query = _parts(pg_url)
    # The first host is a closed port: libpq goes on to the second.
    url = (
        f"postgresql:///{database}?host={host},{host}&port=1,{port}"
        f"&target_session_attrs=read-write&{query}"
    )
    with Store.connect(url) as store:
        assert store.list_runs() == []


def test_a_users_libpq_options_are_kept_beside_the_stores(pg_url: str) -> None:
    url = f"{pg_url}&options=-c%20statement_timeout%3D4321"
    with Store.connect(url) as store:
        # The store's own setting (its schema) and the user's both hold on its connections.
        pool = store.backend._pool  # type: ignore[attr-defined]
        with pool.connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == (
                "4321ms"
            )
            assert conn.execute("SHOW search_path").fetchone()["search_path"] == "agentckpt"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://localhost/db?sslmode=bogus", 'invalid sslmode value: "bogus"'),
        ("postgresql://localhost/db?no_such_libpq_option=1", "no_such_libpq_option"),
        ("postgresql://localhost:notaport/db", "notaport|Servname"),
    ],
)
def test_a_url_libpq_cannot_use_is_a_configuration_error_at_once(url: str, reason: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match=reason):
        Store.connect(url)
    assert time.monotonic() - started < 2


def test_a_missing_database_or_role_fails_at_once_with_the_servers_reason(
    pg_server_dsn: str,
) -> None:
    parts = urlsplit(pg_server_dsn)
    server = f"{parts.hostname}:{parts.port or 5432}"
    cases = [
        (f"postgresql://{server}/no_such_db_agentckpt", 'database "no_such_db_agentckpt"'),
        (f"postgresql://no_such_role_agentckpt@{server}/postgres", 'role "no_such_role_agentckpt"'),
    ]
    for url, reason in cases:
        started = time.monotonic()
        with pytest.raises(ConfigurationError, match=reason) as info:
            Store.connect(url)
        assert time.monotonic() - started < 2
        assert "does not exist" in str(info.value)


def test_an_unreachable_server_is_unavailable_after_connect_wait_with_the_reason() -> None:
    started = time.monotonic()
    with pytest.raises(UnavailableError, match=r"within 1 s: .*Connection refused"):
        Store.connect("postgresql://127.0.0.1:1/x?connect_wait=1")
    assert time.monotonic() - started < 4
