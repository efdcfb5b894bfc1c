"""Every hot statement of a Citus store is routed to one shard: one task on one worker."""

from __future__ import annotations

import re

import psycopg
import pytest

from tests.clusters.citus import CitusCluster
from tests.scale.citus.conftest import SCHEMA
from tests.scale.hot import HOT, explain


@pytest.mark.parametrize(("what", "name", "params"), HOT, ids=[h[0] for h in HOT])
def test_hot_statement_is_one_task_on_one_worker(
    citus_cluster: CitusCluster, citus_store_url: str, what: str, name: str, params: dict
) -> None:
    with psycopg.connect(citus_cluster.url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {SCHEMA}")
        plan = explain(conn, name, params)
    text = "\n".join(plan)
    assert "Citus Adaptive" in text, f"{what}: not a distributed plan:\n{text}"
    assert "Subplan" not in text, f"{what}: split into subplans:\n{text}"
    tasks = [int(n) for n in re.findall(r"Task Count: (\d+)", text)]
    assert tasks == [1], f"{what}: tasks {tasks}:\n{text}"
    nodes = set(re.findall(r"Node: host=\S+ port=(\d+)", text))
    assert len(nodes) == 1, text
    assert int(nodes.pop()) in citus_cluster.worker_ports, text
