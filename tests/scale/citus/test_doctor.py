"""``agentckpt doctor`` on Citus reports the nodes, the shards and the distribution."""

from __future__ import annotations

import psycopg

from agentckpt.cli.doctor import diagnose
from tests.clusters.citus import CitusCluster
from tests.scale.citus.conftest import SCHEMA


def test_doctor_reports_nodes_shards_and_colocation(citus_cluster: CitusCluster, url: str) -> None:
    findings = {f.check: f for f in diagnose(url)[1]}
    nodes = findings["Citus nodes"]
    assert nodes.status == "ok"
    for port in citus_cluster.worker_ports:
        assert f"worker 127.0.0.1:{port}" in nodes.value
    assert findings["Citus shards"].value == "4 per distributed table"
    assert findings["Citus distribution"].status == "ok"
    assert "9 tables by run_id, co-located with runs; 2 reference" in (
        findings["Citus distribution"].value
    )


def test_doctor_fails_a_table_left_local(citus_cluster: CitusCluster, url: str) -> None:
    with psycopg.connect(citus_cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {SCHEMA}.doctor_extra (run_id uuid PRIMARY KEY)")
    try:
        finding = {f.check: f for f in diagnose(url)[1]}["Citus distribution"]
    finally:
        with psycopg.connect(citus_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP TABLE {SCHEMA}.doctor_extra")
    assert finding.status == "fail"
    assert "doctor_extra" in finding.value
    assert "create_distributed_table" in finding.advice
