"""Reconnects and pool wait time, read through the PostgreSQL backend's pool_stats()."""

from __future__ import annotations

import contextlib

from agentckpt import Store
from agentckpt.errors import OutcomeUnknownError, UnavailableError
from tests.integration.telemetry.conftest import Pipeline
from tests.support.dbsql import run_sql


def test_pool_stats_are_the_pools_running_totals(pg_url: str) -> None:
    with Store.connect(pg_url) as store:
        store.create_run()
        stats = store.backend.pool_stats()  # type: ignore[attr-defined]
    assert stats["requests_num"] >= 1
    assert all(isinstance(value, int) for value in stats.values())


def test_a_killed_connection_is_counted_as_a_reconnect(pg_url: str, pipeline: Pipeline) -> None:
    url = pg_url + "&application_name=tel_reconnect"
    kill = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = 'tel_reconnect' AND pid <> pg_backend_pid()"
    )
    with Store.connect(url, telemetry=pipeline.telemetry) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        assert run_sql(url, kill)[0][0] >= 1
        for n in range(2, 6):  # each pooled connection found dead, one after another
            with contextlib.suppress(OutcomeUnknownError, UnavailableError):
                store.commit(run.run_id, {"n": n})
        (reconnects,) = pipeline.points("agentckpt.reconnects")
        (waited,) = pipeline.points("agentckpt.pool.wait_time")
    assert reconnects.attributes == {"db.system": "postgresql"}
    assert reconnects.value >= 1
    assert waited.value >= 0


def test_a_sqlite_store_publishes_no_pool_points(sqlite_url: str, pipeline: Pipeline) -> None:
    with Store.connect(sqlite_url, telemetry=pipeline.telemetry) as store:
        store.create_run()
        assert pipeline.points("agentckpt.reconnects") == []
