"""A head that went backwards: after an asynchronous failover the new primary lacks steps
this store had acknowledged. The writer gets ``AcknowledgedStepsLostError`` (a
``StaleHeadError``) naming both steps, an ERROR log line and a count in the store's
counters, once; and ``agentckpt doctor`` says which setting allowed it."""

from __future__ import annotations

import json
import logging

import pytest

from agentckpt import AcknowledgedStepsLostError, SnapshotPolicy, StaleHeadError, Store
from tests.clusters.replication import ReplicatedPair
from tests.support.sample_store import cli

pytestmark = [pytest.mark.fault, pytest.mark.timeout(120)]


def test_a_writer_that_finds_the_head_below_its_acknowledged_step_gets_a_typed_error(
    pg_async_pair: ReplicatedPair, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="agentckpt.store")
    with Store.connect(pg_async_pair.url, policy=SnapshotPolicy(prune=False)) as store:
        run = store.create_run()
        for n in range(1, 6):
            store.commit(run.run_id, {"n": n})
        pg_async_pair.wait_replayed()
        pg_async_pair.cut()
        for n in range(6, 11):
            store.commit(run.run_id, {"n": n})  # acknowledged, on the primary only
        pg_async_pair.failover()

        with pytest.raises(AcknowledgedStepsLostError) as raised:
            store.commit(run.run_id, {"n": 11})
        error = raised.value
        assert isinstance(error, StaleHeadError)  # existing handlers still catch it
        assert (error.run_id, error.acknowledged_step, error.head_step) == (run.run_id, 10, 5)
        assert "5 acknowledged step(s) were lost" in str(error)
        (record,) = [r for r in caplog.records if r.name == "agentckpt.store"]
        assert record.levelno == logging.ERROR
        message = record.getMessage()
        assert str(run.run_id) in message
        assert "the head is step 5" in message
        assert "acknowledged step 10" in message
        assert store.counters.snapshot() == {"acknowledged_steps_lost": 1, "lost_steps": 5}

        # Once: the writer goes on from what the database holds.
        assert store.commit(run.run_id, {"n": 6}).step == 6
        assert store.latest(run.run_id).state == {"n": 6}  # type: ignore[union-attr]


def test_doctor_fails_for_an_asynchronous_standby_and_passes_a_synchronous_one(
    pg_async_pair: ReplicatedPair, pg_sync_pair: ReplicatedPair, capsys: pytest.CaptureFixture[str]
) -> None:
    def doctor(pair: ReplicatedPair) -> tuple[int, dict[str, dict[str, str]]]:
        assert cli(capsys, "--url", pair.url, "migrate")[0] == 0
        code, out, _ = cli(capsys, "--url", pair.url, "doctor", "--json")
        return code, {f["check"]: f for f in json.loads(out)["findings"]}

    code, checks = doctor(pg_async_pair)
    assert code == 1
    assert checks["failover"]["status"] == "fail"
    assert "no synchronous standby" in checks["failover"]["advice"]
    assert checks["synchronous_standby_names"]["status"] == "fail"
    assert checks[f"standby {pg_async_pair.standby.name}"]["value"].startswith("streaming, async")

    code, checks = doctor(pg_sync_pair)
    assert checks["failover"] == {
        "check": "failover",
        "value": "lossless: a synchronous standby confirms every commit",
        "status": "ok",
        "advice": "",
    }
    assert checks[f"standby {pg_sync_pair.standby.name}"]["value"].startswith("streaming, sync")
    assert code == 0, checks

    pg_sync_pair.stop_standby()
    code, out, _ = cli(capsys, "--url", pg_sync_pair.url, "doctor")
    assert code == 1
    assert "every commit waits" in out
