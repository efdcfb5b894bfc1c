"""Retention on both backends: age rules, keep-K per agent, history pruning, and runs
that are active or leased, which are never deleted."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from agentckpt import AsyncStore, Store
from agentckpt._backends.factory import parse_url
from agentckpt._core.policy import SnapshotPolicy
from agentckpt.errors import ConfigurationError
from agentckpt.ops.retention import Retention, RetentionPolicy, apply_retention
from agentckpt.ops.retention_async import apply_retention as apply_retention_async
from agentckpt.runs.leases import Leases
from tests.support.dbsql import run_sql


def age(url: str, run_id: uuid.UUID, days: float, *, column: str = "updated_at") -> None:
    """Move a run's ``column`` ``days`` into the past."""
    if parse_url(url).dialect == "sqlite":
        past = f"strftime('%Y-%m-%dT%H:%M:%f', 'now', '-{days * 86400} seconds')"
    else:
        past = f"now() - make_interval(secs => {days * 86400})"
    run_sql(url, f"UPDATE runs SET {column} = {past} WHERE run_id = ?", str(run_id))


def make_run(store: Store, agent: str, status: str, *, days: float, url: str) -> uuid.UUID:
    run = store.create_run(agent_id=agent)
    store.commit(run.run_id, {"n": 1})
    if status != "active":
        store.set_status(run.run_id, status)
    age(url, run.run_id, days)
    return run.run_id


def exists(store: Store, run_id: uuid.UUID) -> bool:
    try:
        store.get_run(run_id)
    except LookupError:
        return False
    return True


def test_age_rules_delete_old_ended_and_failed_runs_only(url: str) -> None:
    with Store.connect(url) as store:
        old_done = make_run(store, "a", "completed", days=40, url=url)
        new_done = make_run(store, "a", "completed", days=5, url=url)
        old_failed = make_run(store, "a", "failed", days=40, url=url)
        older_failed = make_run(store, "a", "failed", days=100, url=url)
        old_active = make_run(store, "a", "active", days=400, url=url)
        # Ended, old, but leased by a live worker: never deleted.
        leased = make_run(store, "a", "completed", days=400, url=url)
        Leases(store).acquire(leased, "worker", 60)
        age(url, leased, 400)

        policy = RetentionPolicy(ended_days=30, failed_days=90)
        dry = apply_retention(store, policy, dry_run=True)
        assert dry.runs_deleted == {"ended": 1, "failed": 1}
        assert exists(store, old_done)

        report = apply_retention(store, policy, batch_size=1)
        assert report.runs_deleted == {"ended": 1, "failed": 1}
        assert report.batches == 2
        assert report.longest_batch > 0
        for gone in (old_done, older_failed):
            assert not exists(store, gone)
        for kept in (new_done, old_failed, old_active, leased):
            assert exists(store, kept)
        assert store.latest(old_active) is not None


def test_keep_at_most_k_per_agent_newest_first_never_the_active(url: str) -> None:
    with Store.connect(url) as store:
        ids = []
        for n in range(6):
            ids.append(make_run(store, "b", "active" if n == 1 else "completed", days=0, url=url))
            age(url, ids[-1], 10 - n, column="created_at")  # ids[5] is the newest
        other = make_run(store, "c", "completed", days=0, url=url)
        retention = Retention(agents={"b": RetentionPolicy(keep_runs=2)})
        report = apply_retention(store, retention, batch_size=2)
        assert report.runs_deleted == {"keep_runs": 3}
        survivors = [rid for rid in ids if exists(store, rid)]
        assert survivors == [ids[1], ids[4], ids[5]]  # the two newest, and the active one
        assert exists(store, other)
        # Applying again changes nothing.
        assert apply_retention(store, retention).total_runs == 0


def test_history_older_than_d_days_is_pruned_but_the_head_rebuilds(url: str) -> None:
    with Store.connect(url, policy=SnapshotPolicy(interval=3, prune=False)) as store:
        run = store.create_run(agent_id="h")
        for n in range(10):
            store.commit(run.run_id, {"n": n, "pad": "x" * 50})
        kept_before = len(store.steps(run.run_id))
        if parse_url(url).dialect == "sqlite":
            past = "strftime('%Y-%m-%dT%H:%M:%f', 'now', '-864000 seconds')"
        else:
            past = "now() - interval '10 days'"
        run_sql(url, f"UPDATE steps SET created_at = {past} WHERE run_id = ?", str(run.run_id))
        report = apply_retention(store, RetentionPolicy(history_days=7))
        assert report.runs_pruned == 1
        assert report.steps_pruned > 0
        assert len(store.steps(run.run_id)) == kept_before - report.steps_pruned
        latest = store.latest(run.run_id)
        assert latest is not None
        assert latest.state["n"] == 9


def test_the_async_twin_applies_the_same_rules(url: str) -> None:
    async def scenario() -> int:
        async with await AsyncStore.connect(url) as store:
            run = await store.create_run(agent_id="z")
            await store.set_status(run.run_id, "completed")
            age(url, run.run_id, 3)
            report = await apply_retention_async(store, RetentionPolicy(ended_days=1))
            return report.total_runs

    assert asyncio.run(scenario()) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"default": {"ended_days": -1}},
        {"default": {"ended_days": 36_501}},  # past 100 years: no stored time is older
        {"default": {"history_days": 1e400}},
        {"default": {"keep_runs": 1.5}},
        {"default": {"keep_runs": 2**63}},
        {"default": {"forever": 1}},
        {"agents": []},
        [],
    ],
)
def test_a_bad_policy_is_a_configuration_error_naming_the_field(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="retention"):
        Retention.from_json(bad)


@pytest.mark.parametrize(
    "settings",
    [
        {"default": float("nan")},
        {"default": {"ended_days": 3}},  # the JSON shape, not a RetentionPolicy
        {"agents": ["planner"]},
        {"agents": {"planner": {"keep_runs": 2}}},
        {"agents": {5: RetentionPolicy(keep_runs=2)}},
    ],
)
def test_a_retention_of_the_wrong_types_is_refused_when_made(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=r"retention (default|agents) must"):
        Retention(**settings)
