"""An inspector serving the sample store on a free port, for the inspector tests."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agentckpt import Store
from agentckpt.inspector import make_server
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
