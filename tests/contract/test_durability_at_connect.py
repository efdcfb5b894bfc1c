"""Reliability row 6: a PostgreSQL store that connects to a server running with settings
that can lose acknowledged commits logs ONE warning on ``agentckpt.store``, naming each
setting and what it risks in ``agentckpt doctor``'s words; commits add none.

Real servers only: the shared one with ``synchronous_commit`` set per session through
the URL's ``options=-c ...``, and a throwaway cluster for what only the server's
configuration can set (``fsync``, ``full_page_writes``, ``synchronous_standby_names``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest

from agentckpt import Store
from agentckpt._core.durability import weak_settings
from agentckpt.cli.doctor import diagnose
from tests.support.facade import AsyncFacade

RISK_OFF = "a server crash loses commits that were already acknowledged"


def with_options(url: str, options: str) -> str:
    """``url`` with libpq's ``options`` parameter added to its query string."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(options)}"


@pytest.fixture(params=["sync", "async"])
def open_store(request: pytest.FixtureRequest) -> Iterator[Callable[[str], Any]]:
    """Open a sync ``Store`` or an ``AsyncStore`` (behind a facade); closed after."""
    opened: list[Any] = []

    def make(url: str) -> Any:
        store = Store.connect(url) if request.param == "sync" else AsyncFacade(url)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def store_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "agentckpt.store" and r.levelno == logging.WARNING
    ]


def commit_some(store: Any) -> None:
    run = store.create_run()
    for n in range(3):
        store.commit(run.run_id, {"n": n})
    assert store.latest(run.run_id).state == {"n": 2}


def test_synchronous_commit_off_in_the_session_warns_once(
    pg_url: str, open_store: Callable[[str], Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentckpt.store")
    store = open_store(with_options(pg_url, "-c synchronous_commit=off"))
    commit_some(store)
    warnings = store_warnings(caplog)
    assert len(warnings) == 1, warnings
    (message,) = warnings
    assert "synchronous_commit = off" in message
    assert RISK_OFF in message
    assert "fsync" not in message
    assert "full_page_writes" not in message
    # The doctor judges the same session the same way, in the same words.
    _, findings = diagnose(with_options(pg_url, "-c synchronous_commit=off"))
    (finding,) = [f for f in findings if f.check == "synchronous_commit"]
    assert finding.status == "fail"
    assert finding.advice in message
    caplog.clear()
    commit_some(store)  # no per-commit check
    assert store_warnings(caplog) == []


@pytest.mark.parametrize("options", ["", "-c synchronous_commit=local", "-c synchronous_commit=on"])
def test_durable_settings_do_not_warn(
    pg_url: str,
    open_store: Callable[[str], Any],
    caplog: pytest.LogCaptureFixture,
    options: str,
) -> None:
    """``local`` is as durable as ``on`` on a server without synchronous standbys."""
    caplog.set_level(logging.WARNING, logger="agentckpt.store")
    store = open_store(with_options(pg_url, options) if options else pg_url)
    commit_some(store)
    assert store_warnings(caplog) == []


def test_every_weak_setting_of_a_server_is_named_in_one_warning(
    make_pg_cluster: Any, open_store: Callable[[str], Any], caplog: pytest.LogCaptureFixture
) -> None:
    """fsync = off (a throwaway cluster's), full_page_writes = off, and
    synchronous_commit = local while synchronous_standby_names names a standby."""
    cluster = make_pg_cluster(
        "reliab2_weak",
        settings={"full_page_writes": False, "synchronous_standby_names": "reliab2_standby"},
        durable=False,
    )
    url = with_options(f"{cluster.url}?schema=reliab2", "-c synchronous_commit=local")
    caplog.set_level(logging.WARNING, logger="agentckpt.store")
    store = open_store(url)
    commit_some(store)  # local does not wait for the (absent) standby
    warnings = store_warnings(caplog)
    assert len(warnings) == 1, warnings
    (message,) = warnings
    for named in ("synchronous_commit = local", "fsync = off", "full_page_writes = off"):
        assert named in message, (named, message)
    _, findings = diagnose(url)
    failed = {f.check: f.advice for f in findings if f.status == "fail"}
    for check in ("synchronous_commit", "fsync", "full_page_writes"):
        assert failed[check] in message, check


def test_settings_a_server_does_not_have_are_not_judged() -> None:
    """A PostgreSQL-compatible engine without a setting answers NULL (missing_ok): no
    warning for it, and the store still connects."""
    assert weak_settings({}) == []
    nulls = {"synchronous_commit": None, "fsync": None, "full_page_writes": None}
    assert weak_settings(nulls) == []
    found = weak_settings({"synchronous_commit": "on", "fsync": "off", "full_page_writes": None})
    assert [(w.setting, w.value) for w in found] == [("fsync", "off")]
    remote = {"synchronous_commit": "remote_write", "synchronous_standby_names": "s1"}
    assert weak_settings({**remote, "fsync": "on", "full_page_writes": "on"}) == []
