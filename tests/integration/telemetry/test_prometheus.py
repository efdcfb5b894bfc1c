"""The Prometheus endpoint, scraped over HTTP and parsed with prometheus-client's parser."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

pytest.importorskip("prometheus_client", reason="the metrics extra is a test dependency")

from prometheus_client.parser import text_string_to_metric_families

from agentckpt import Store
from agentckpt._backends.factory import parse_url
from agentckpt.errors import StaleHeadError
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.prometheus import PrometheusMetrics, serve_metrics


def scrape(port: int) -> dict[str, list[Any]]:
    """Samples by name from http://127.0.0.1:port/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def value(samples: dict[str, list[Any]], name: str, **labels: str) -> float:
    found = [s.value for s in samples.get(name, []) if labels.items() <= s.labels.items()]
    assert found, (name, labels, sorted(samples))
    return float(sum(found))


def test_an_application_endpoint_publishes_commits_and_conflicts(url: str) -> None:
    system = "sqlite" if parse_url(url).dialect == "sqlite" else "postgresql"
    prometheus = PrometheusMetrics()
    telemetry = Telemetry(prometheus=prometheus, use_global=False)
    server = serve_metrics(prometheus, port=0)
    try:
        with Store.connect(url, telemetry=telemetry) as store, Store.connect(url) as other:
            run = store.create_run()
            for n in range(3):
                store.commit(run.run_id, {"n": n})
            other.commit(run.run_id, {"n": 99})
            with pytest.raises(StaleHeadError):
                store.commit(run.run_id, {"n": 100}, expected_head=3)
            store.resume(run.run_id)
            samples = scrape(server.port)
    finally:
        server.close()
    assert (
        value(samples, "agentckpt_commit_duration_seconds_count", db_system=system, outcome="ok")
        == 3
    )
    assert value(samples, "agentckpt_commit_duration_seconds_count", outcome="stale_head") == 1
    assert value(samples, "agentckpt_conflicts_total", type="stale_head") == 1
    assert value(samples, "agentckpt_commit_written_bytes_total", db_system=system) > 0
    assert value(samples, "agentckpt_commit_batch_size_count") == 4  # the refused one too
    assert value(samples, "agentckpt_resume_duration_seconds_count", outcome="ok") == 1
    if system == "postgresql":
        # The pool's running totals, read at the scrape.
        assert value(samples, "agentckpt_pool_wait_time_seconds_total") >= 0
        assert "agentckpt_reconnects_total" in samples


def test_agentckpt_metrics_serve_publishes_runs_by_status(url: str) -> None:
    with Store.connect(url) as store:
        for status in ("completed", "completed", "failed"):
            run = store.create_run(agent_id="a")
            store.set_status(run.run_id, status)
        store.create_run(agent_id="a")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen(
        [sys.executable, "-m", "agentckpt", "metrics", "serve", "--url", url, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line or server.stderr.read()
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        samples = scrape(port)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=20)
        for pipe in (server.stdout, server.stderr):
            if pipe is not None:
                pipe.close()
    assert value(samples, "agentckpt_store_up") == 1
    assert value(samples, "agentckpt_runs", kind="run", status="completed") == 2
    assert value(samples, "agentckpt_runs", kind="run", status="failed") == 1
    assert value(samples, "agentckpt_runs", kind="run", status="active") == 1
    assert value(samples, "agentckpt_runs_lease_expired", kind="run") == 0
    assert server.returncode == 130


@pytest.mark.parametrize("command", [("metrics", "serve"), ("inspect",)])
@pytest.mark.parametrize("bad", ["70000", "-1", "http"])
def test_serving_commands_refuse_a_port_that_is_not_one(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], command: tuple[str, ...], bad: str
) -> None:
    """A usage error naming --port (inspect raised OverflowError from bind for -1)."""
    from tests.support.sample_store import cli

    code, out, err = cli(capsys, *command, "--url", sqlite_url, "--port", bad)
    assert code == 2
    assert f"argument --port: {bad if bad == '-1' or bad == '70000' else repr(bad)}" in err
    assert "Traceback" not in err + out
