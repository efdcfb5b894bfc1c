"""Store URLs and settings: every libpq form kept as written, one name per setting."""

from __future__ import annotations

import pytest

from agentckpt._backends.factory import parse_url
from agentckpt._backends.options import (
    CommitOptions,
    PostgresOptions,
    SqliteOptions,
    resolve_options,
)
from agentckpt.errors import ConfigurationError


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("postgresql:///agents", "postgresql:///agents"),
        ("postgresql:///agents?wait=2", "postgresql:///agents"),
        (
            "postgresql:///db?host=/var/run/postgresql",
            "postgresql:///db?host=/var/run/postgresql",
        ),
        (
            "postgresql:///db?host=a,b&port=5432,5433&pool_max=3",
            "postgresql:///db?host=a,b&port=5432,5433",
        ),
        (
            "postgresql://u@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write",
            "postgresql://u@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write",
        ),
        ("postgresql://u@[::1]:5432/db?schema=s1", "postgresql://u@[::1]:5432/db"),
        ("postgresql://u:p%40ss%2Fw@localhost/db", "postgresql://u:p%40ss%2Fw@localhost/db"),
        (
            "postgresql://localhost/db?options=-c%20statement_timeout%3D5s&group_commit=8",
            "postgresql://localhost/db?options=-c%20statement_timeout%3D5s",
        ),
        ("postgres://localhost/db", "postgres://localhost/db"),
    ],
)
def test_a_postgres_url_reaches_libpq_as_written_minus_agentckpt_settings(
    url: str, location: str
) -> None:
    target = parse_url(url)
    assert target.dialect == "postgresql"
    assert target.location == location


def test_settings_come_from_the_url_and_keywords_win() -> None:
    target = parse_url("postgresql:///db?pool_max=3&wait=2.5&schema=s1&prepare_threshold=none")
    options, commit = target.resolve({"pool_max": 7})
    assert options == PostgresOptions(schema="s1", pool_max=7, wait=2.5, prepare_threshold=None)
    assert commit == CommitOptions()


@pytest.mark.parametrize(
    ("url", "keywords", "message"),
    [
        ("sqlite:///x.db", {"pool_max": 3}, "unknown sqlite setting 'pool_max'"),
        ("sqlite:///x.db?pool_max=3", {}, "unknown sqlite setting 'pool_max'"),
        ("sqlite:///x.db", {"commit_senders": 2}, "commit_senders"),
        ("postgresql:///db", {"max_size": 3}, "unknown postgresql setting 'max_size'"),
        ("postgresql:///db", {"pool_max": "3"}, "must be an int, not str"),
        ("postgresql:///db", {"pool_max": True}, "must be an int, not bool"),
        ("postgresql:///db", {"wait": 0}, "must be above 0"),
        ("postgresql:///db?pool_max=x", {}, "is not an int"),
        ("postgresql:///db?pool_min=5&pool_max=2", {}, "must not exceed pool_max"),
        ("postgresql:///db?schema=Bad-Name", {}, "schema"),
        ("postgresql:///db?group_commit=0", {}, "group_commit=0 must be at least 1"),
        # NaN passed every range check (a deadline of NaN dropped every connection).
        ("postgresql:///db?deadline=nan", {}, "deadline=nan must be a finite number"),
        ("postgresql:///db?wait=inf", {}, "wait=inf must be a finite number"),
        ("sqlite:///x.db", {"outage_limit": float("nan")}, "outage_limit=nan must be a finite"),
    ],
)
def test_a_bad_setting_is_a_configuration_error_naming_it(
    url: str, keywords: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_url(url).resolve(keywords)


def test_sqlite_settings() -> None:
    options, commit = resolve_options("sqlite", {"wait": "4"}, {"group_commit": 16})
    assert options == SqliteOptions(wait=4.0)
    assert commit == CommitOptions(group_commit=16, commit_senders=1)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///agents.db", "agents.db"),
        ("sqlite:////tmp/a b.db", "/tmp/a b.db"),
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite:///agents.db?wait=3", "agents.db"),
    ],
)
def test_sqlite_paths(url: str, path: str) -> None:
    assert parse_url(url).location == path


@pytest.mark.parametrize(
    "url", ["mysql://x/y", "sqlite://host/x.db", "sqlite:///", "", "agents.db"]
)
def test_unsupported_urls(url: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_url(url)
