"""``agentckpt migrate``: apply, --check, and --print-sql applied by another tool."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import psycopg
import pytest

from agentckpt._backends.factory import parse_url
from agentckpt._backends.sql import load_migrations
from tests.support.sample_store import cli

ALL = [m.version for m in load_migrations("sqlite")]


# Every test here starts from a store that was never migrated.
@pytest.fixture
def url(blank_url: str) -> str:
    return blank_url


@pytest.fixture
def pg_url(pg_blank_url: str) -> str:
    return pg_blank_url


def test_check_apply_check(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--url", url, "migrate", "--check", "--json")
    assert code == 1
    assert json.loads(out) == {"applied": [], "pending": ALL, "up_to_date": False}

    code, out, _ = cli(capsys, "--url", url, "migrate")
    assert code == 0
    assert out == f"applied migrations: {', '.join(map(str, ALL))}\n"

    code, out, _ = cli(capsys, "--url", url, "migrate", "--check")
    assert code == 0
    assert out.startswith("up to date")

    code, out, _ = cli(capsys, "--url", url, "migrate", "--json")
    assert code == 0
    assert json.loads(out) == {"applied_now": [], "applied": ALL}


def test_read_commands_refuse_an_unmigrated_store(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "--url", pg_url, "runs", "list")
    assert code == 1
    assert "run `agentckpt migrate` first" in err
    assert err.count("\n") == 1


def test_printed_sql_applied_by_another_tool_is_up_to_date(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, sql, _ = cli(capsys, "--url", url, "migrate", "--print-sql")
    assert code == 0
    target = parse_url(url)
    if target.dialect == "sqlite":
        with closing(sqlite3.connect(target.location)) as conn:
            conn.executescript(sql)
    else:
        assert f"SET search_path TO {target.settings['schema']};" in sql
        with psycopg.connect(target.location, autocommit=True) as conn:
            conn.execute(sql.encode())
    code, out, _ = cli(capsys, "--url", url, "migrate", "--check")
    assert code == 0, out
    code, out, _ = cli(capsys, "--url", url, "runs", "list")
    assert code == 0
    assert out == "(none)\n"


def test_print_sql_needs_no_server(capsys: pytest.CaptureFixture[str]) -> None:
    code, sql, _ = cli(capsys, "migrate", "--print-sql", "--dialect", "postgresql")
    assert code == 0
    assert "CREATE TABLE runs" in sql
    assert sql.count("COMMIT;") == len(ALL)
    assert "SET search_path TO agentckpt;" in sql
