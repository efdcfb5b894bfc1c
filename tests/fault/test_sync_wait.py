"""A commit waiting for a stopped synchronous standby: the deadline, a cancel by someone
else, KeyboardInterrupt and task cancellation all leave it *outcome unknown*, never "not
written"; a retry is the same commit, and returns only once the standby has it."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from agentckpt import AsyncStore, OutcomeUnknownError, SnapshotPolicy, Store
from agentckpt._backends.postgres import INTERRUPTED_WRITE_NOTE
from tests.clusters.replication import ReplicatedPair

pytestmark = [pytest.mark.fault, pytest.mark.timeout(150)]

KEEP_ALL = SnapshotPolicy(prune=False)
STEP_ROWS = "SELECT step, write_version FROM agentckpt.steps WHERE run_id = %s ORDER BY step"


def head(pair: ReplicatedPair, run_id: object) -> int:
    return int(
        pair.primary.scalar("SELECT head_step FROM agentckpt.runs WHERE run_id = %s", [run_id])
    )


def test_a_deadline_during_the_sync_wait_is_outcome_unknown_and_the_retry_waits_for_the_standby(
    pg_sync_pair: ReplicatedPair,
) -> None:
    with Store.connect(pg_sync_pair.url, deadline=1.0, policy=KEEP_ALL) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pg_sync_pair.stop_standby()

        started = time.monotonic()
        with pytest.raises(OutcomeUnknownError, match="synchronous standby") as raised:
            store.commit(run.run_id, {"n": 2})
        waited = time.monotonic() - started
        assert 1.0 <= waited < 4.0, waited
        assert "not written" not in str(raised.value)
        # Committed on the primary all the same: "not written" would have been a lie.
        assert head(pg_sync_pair, run.run_id) == 2

        # A retry while the standby is still down does not report success: it waits for
        # the standby too, and is outcome-unknown again.
        with pytest.raises(OutcomeUnknownError):
            store.commit(run.run_id, {"n": 2})

        pg_sync_pair.start_standby()
        info = store.commit(run.run_id, {"n": 2})
        assert (info.step, info.write_version) == (2, 1)
        # The retry was the same commit: no step 3, no second write of step 2.
        assert pg_sync_pair.primary.sql(STEP_ROWS, [run.run_id]) == [(1, 1), (2, 1)]
        pg_sync_pair.wait_replayed()
        assert pg_sync_pair.standby.sql(STEP_ROWS, [run.run_id]) == [(1, 1), (2, 1)]
        assert store.commit(run.run_id, {"n": 3}).step == 3


def test_a_cancel_from_elsewhere_is_outcome_unknown_not_success(
    pg_sync_pair: ReplicatedPair,
) -> None:
    """PostgreSQL answers a cancelled sync wait with a WARNING and a successful COMMIT;
    the store must not take that as an acknowledgement."""
    with Store.connect(pg_sync_pair.url, deadline=30.0, policy=KEEP_ALL) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pg_sync_pair.stop_standby()

        def cancel_waiting_commit() -> None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                cancelled = pg_sync_pair.primary.sql(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                    "WHERE wait_event = 'SyncRep'"
                )
                if cancelled:
                    return
                time.sleep(0.05)

        canceller = threading.Thread(target=cancel_waiting_commit)
        canceller.start()
        started = time.monotonic()
        with pytest.raises(OutcomeUnknownError, match="canceling wait for synchronous"):
            store.commit(run.run_id, {"n": 2}, step=2)
        canceller.join()
        assert time.monotonic() - started < 10
        pg_sync_pair.start_standby()
        assert store.commit(run.run_id, {"n": 2}, step=2).write_version == 1
        assert pg_sync_pair.primary.sql(STEP_ROWS, [run.run_id]) == [(1, 1), (2, 1)]


def test_keyboard_interrupt_during_the_sync_wait_propagates_with_a_note_and_the_retry_lands(
    pg_sync_pair: ReplicatedPair,
) -> None:
    with Store.connect(pg_sync_pair.url, deadline=30.0, policy=KEEP_ALL) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pg_sync_pair.stop_standby()
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt) as raised:
                store.commit(run.run_id, {"n": 2})
        finally:
            timer.cancel()
        # Never swallowed, never turned into "not written": the note says what to do.
        assert INTERRUPTED_WRITE_NOTE in getattr(raised.value, "__notes__", [])
        assert head(pg_sync_pair, run.run_id) == 2
        pg_sync_pair.start_standby()
        assert store.commit(run.run_id, {"n": 2}).step == 2
        assert pg_sync_pair.primary.sql(STEP_ROWS, [run.run_id]) == [(1, 1), (2, 1)]


def test_task_cancellation_during_the_sync_wait_and_the_retry(
    pg_sync_pair: ReplicatedPair,
) -> None:
    async def scenario() -> None:
        store = await AsyncStore.connect(pg_sync_pair.url, deadline=30.0, policy=KEEP_ALL)
        try:
            run = await store.create_run()
            await store.commit(run.run_id, {"n": 1})
            pg_sync_pair.stop_standby()
            task = asyncio.ensure_future(store.commit(run.run_id, {"n": 2}))
            await asyncio.sleep(1.0)
            assert not task.done()  # waiting for the standby
            task.cancel()
            with pytest.raises(asyncio.CancelledError) as raised:
                await task
            assert INTERRUPTED_WRITE_NOTE in getattr(raised.value, "__notes__", [])
            assert head(pg_sync_pair, run.run_id) == 2
            pg_sync_pair.start_standby()
            assert (await store.commit(run.run_id, {"n": 2})).step == 2
        finally:
            await store.close()

    asyncio.run(scenario())
    assert pg_sync_pair.primary.sql("SELECT count(*) FROM agentckpt.steps") == [(2,)]
