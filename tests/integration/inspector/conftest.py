"""Inspectors on a free port for the inspector tests: over the sample store (one per
test), and over a store holding a run of every kind (one per module and backend)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentckpt import Store
from agentckpt.inspector import make_server
from tests.integration.inspector import fixtures
from tests.support.sample_store import Sample, populate


@dataclass
class Served:
    """A running inspector: its base URL and the sample it shows."""

    base: str
    sample: Sample
    url: str


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: str


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> Response:
    """One HTTP request to the local inspector; redirects are not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=30) as reply:
            return Response(reply.status, dict(reply.headers), reply.read().decode())
    except urllib.error.HTTPError as exc:
        return Response(exc.code, dict(exc.headers), exc.read().decode())


@pytest.fixture
def served(url: str) -> Iterator[Served]:
    """The sample store behind an inspector on 127.0.0.1, in a thread of this process."""
    sample = populate(url)
    store = Store.connect(url, migrate=False)
    server = make_server(store, port=0, label="test store")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(server.url, sample, url)
    finally:
        server.shutdown()
        server.server_close()
        store.close()


@contextmanager
def serving(store: Store) -> Iterator[str]:
    """An inspector over ``store`` in a thread of this process; yields its base URL."""
    server = make_server(store, port=0, label="test store")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def module_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated store of this module's own, on each backend (dropped after)."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path_factory.mktemp("kinds") / "store.db"
        shutil.copyfile(template, path)
        yield f"sqlite:///{path}"
        return
    base = str(request.getfixturevalue("pg_server_dsn")).split("?")[0]
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{base}?schema={schema}"
    Store.connect(url).close()
    try:
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@dataclass
class Kinds:
    """An inspector over a store with a run of every kind."""

    base: str
    runs: fixtures.Fixtures
    url: str
    store: Store


@pytest.fixture(scope="module")
def kinds(module_url: str) -> Iterator[Kinds]:
    """A LangGraph thread, an Agents SDK session, conversations and a long run, served."""
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    runs = fixtures.populate(module_url)
    store = Store.connect(module_url, migrate=False)
    try:
        with serving(store) as base:
            yield Kinds(base, runs, module_url, store)
    finally:
        store.close()


def page_of(base: str, *parts: Any, query: str = "") -> str:
    """The body of a page that must answer 200."""
    address = base + "/".join(str(p) for p in parts) + (f"?{query}" if query else "")
    reply = fetch(address)
    assert reply.status == 200, (address, reply.body[:800])
    return reply.body


@dataclass
class Process:
    """An ``agentckpt inspect`` process and the first line it printed."""

    proc: subprocess.Popen[str]
    line: str


def start_inspect(url: str, *args: str) -> Process:
    """Start ``agentckpt inspect`` on a free port; returns once it prints its address."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTCKPT_INSPECT_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentckpt", "--url", url, "inspect", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return Process(proc, line)


def stop(process: Process) -> None:
    """Stop an inspector started by :func:`start_inspect`."""
    process.proc.terminate()
    process.proc.wait(timeout=30)
    for stream in (process.proc.stdout, process.proc.stderr):
        if stream is not None:
            stream.close()
