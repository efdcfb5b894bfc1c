"""``agentckpt bench --backend citus`` runs both workloads on the cluster beside one
server and reports each worker's share."""

from __future__ import annotations

import re

import pytest

from agentckpt.bench.cli import main
from tests.clusters.citus import CitusCluster
from tests.clusters.cluster import PgCluster


def test_bench_citus_beside_a_single_server(
    citus_cluster: CitusCluster, pg_cluster: PgCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--backend", "citus", "--citus-url", citus_cluster.url,
            "--pg-url", pg_cluster.url, "--quick", "--agents", "16", "--quiet",
            "--schema-prefix", "benchtest",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    for workload in ("conversation", "long_run"):
        assert re.search(rf"\| {workload} \| commits/s \| \d+ \| \d+ \|", out), out
    shares = re.findall(r"- 127\.0\.0\.1:(\d+): (\d+) ", out)
    assert {int(port) for port, _ in shares} == set(citus_cluster.worker_ports)
    assert sum(int(n) for _, n in shares) == 16 * 3 * 2  # agents x turns x two commits


def test_bench_citus_needs_the_coordinator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--backend", "citus"])
    assert exit_info.value.code == 2
    assert "--citus-url" in capsys.readouterr().err
