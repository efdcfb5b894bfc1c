"""Reconnecting after a failover: the store's pool retries a lost connection after
``reconnect_initial_delay`` seconds, doubling up to ``reconnect_max_delay``, so agents are
back within about a second of the new primary appearing. psycopg_pool's own backoff
(1 s, 2 s, 4 s, ...) can leave them waiting many seconds longer: measured here too."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentckpt import Conversations, SnapshotPolicy, Store, UnavailableError
from tests.clusters.fixtures import Factory
from tests.clusters.replication import ReplicatedPair, start_pair
from tests.fault.support import Figures

pytestmark = [pytest.mark.fault, pytest.mark.cluster, pytest.mark.timeout(150)]


@pytest.fixture
def make_pg_pair() -> Iterator[Factory]:
    """Synchronous pairs, as many as the test makes, all cleaned up after it."""
    factory = Factory("make_pg_pair", lambda: start_pair("reconnect", sync=True))
    try:
        yield factory
    finally:
        factory.cleanup()


# The primary stays down this long before the standby is promoted.
DOWN = 8.0


def back_after_promotion(pair: ReplicatedPair, **settings: Any) -> float:
    """Seconds from the promotion to the first commit that lands on the new primary."""
    with Store.connect(
        pair.url, outage_limit=0, policy=SnapshotPolicy(prune=False), **settings
    ) as store:
        run = store.create_run()
        store.commit(run.run_id, {"n": 1})
        pair.primary.kill()
        # The pool notices the loss at the next use, as an agent's next commit would.
        with pytest.raises(UnavailableError):
            store.latest(run.run_id)
        time.sleep(DOWN)
        pair.standby.promote()
        promoted = time.monotonic()
        while True:
            try:
                store.commit(run.run_id, {"n": 2}, step=2)
                return time.monotonic() - promoted
            except UnavailableError:
                time.sleep(0.02)


def test_the_default_backoff_reconnects_within_about_a_second_of_the_promotion(
    make_pg_pair: Any,
) -> None:
    ours = back_after_promotion(make_pg_pair(), wait=1.0)
    psycopgs = back_after_promotion(
        make_pg_pair(), wait=1.0, reconnect_initial_delay=1.0, reconnect_max_delay=3600.0
    )
    Figures(extra={"defaults_s": round(ours, 2), "psycopg_backoff_s": round(psycopgs, 2)}).show(
        f"reconnect after a promotion {DOWN:g} s after the kill"
    )
    assert ours < 2.0
    # psycopg_pool's 1 s, 2 s, 4 s, 8 s: its attempt after the promotion comes up to
    # 7 s later (attempts at 0, 1, 3, 7, 15 s after the loss).
    assert psycopgs > ours + 1.0


def test_a_conversation_rides_out_a_failover_by_itself(pg_sync_pair: ReplicatedPair) -> None:
    with Store.connect(pg_sync_pair.url, wait=1.0, outage_limit=60) as store:
        conversations = Conversations(store)
        conv = conversations.start(agent_id="a", agent_config={"model": "m"}, tools=[])
        conv.add_user_message("hello")
        conv.add_assistant_message("hi")
        pg_sync_pair.primary.kill()
        started = time.monotonic()
        timer = _promote_later(pg_sync_pair, 3.0)
        # No UnavailableError reaches the caller: the turn's commit waits out the outage.
        conv.add_user_message("still there?")
        conv.add_assistant_message("yes")
        timer.join()
        took = time.monotonic() - started
        reopened = Conversations(store).open(
            conv.conversation_id, agent_config={"model": "m"}, tools=[]
        )
        assert [m.content for m in reopened.messages] == ["hello", "hi", "still there?", "yes"]
    Figures(outage_seconds=took).show("conversation through a failover")
    assert took < 3.0 + 3.0


def _promote_later(pair: ReplicatedPair, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, pair.standby.promote)
    timer.start()
    return timer
