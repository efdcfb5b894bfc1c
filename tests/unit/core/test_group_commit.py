"""Group commit's batching, driven by a send function the test holds back at will.

The send here stands for the database round trip; what is tested is which writes travel
together, in what order, how many at once, and what each caller gets back. The real
statement is tested against PostgreSQL in tests/contract/test_group_commit.py.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from agentckpt._compat.group_commit import AsyncGroupCommit, GroupCommit, write_bytes
from agentckpt._core.writes import CommitOutcome, Committed, Payload, StepWrite, layers
from agentckpt.errors import StoreError, UnavailableError
from tests.support.writes import step_write

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def write(run: uuid.UUID | None = None, step: int = 1, payload: bytes = b"{}") -> StepWrite:
    """A step write; only its run, step and size matter to batching."""
    return step_write(run, step, payload=payload)


def outcome(w: StepWrite) -> Committed:
    """A distinct outcome per write, so a mix-up between callers shows."""
    return Committed(NOW, datetime(2026, 1, 1, 0, 0, w.step % 60, tzinfo=UTC))


class Gate:
    """An async send that records each batch and waits until the test opens the gate."""

    def __init__(self) -> None:
        self.batches: list[list[StepWrite]] = []
        self.open = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0
        self.refuse: set[uuid.UUID] = set()
        self.error: BaseException | None = None

    async def send(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        self.batches.append(list(writes))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.open.wait()
            if self.error is not None:
                raise self.error
            if any(w.run_id in self.refuse for w in writes):
                raise StoreError("check constraint violated")
            return [outcome(w) for w in writes]
        finally:
            self.in_flight -= 1


async def settle() -> None:
    """Let every runnable task run until it blocks."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_lone_commit_is_sent_at_once_and_alone() -> None:
    async def main() -> None:
        gate = Gate()
        gate.open.set()
        group = AsyncGroupCommit(gate.send, concurrency=2)
        w = write()
        assert await group.commit(w) == outcome(w)
        assert gate.batches == [[w]]

    asyncio.run(main())


def test_commits_queued_behind_busy_senders_travel_together() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1, max_writes=3)
        first = write(step=1)
        rest = [write(step=i) for i in range(2, 9)]
        tasks = [asyncio.create_task(group.commit(w)) for w in [first, *rest]]
        await settle()
        assert gate.batches == [[first]]  # the others queued behind the busy sender
        gate.open.set()
        results = await asyncio.gather(*tasks)
        assert results == [outcome(w) for w in [first, *rest]]
        assert gate.batches == [[first], rest[0:3], rest[3:6], rest[6:7]]
        assert gate.most_in_flight == 1

    asyncio.run(main())


def test_a_run_appears_once_per_batch_and_its_writes_keep_their_order() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        run, other = uuid.uuid4(), uuid.uuid4()
        blocker = write()
        queued = [write(run, 1), write(run, 2), write(other, 1), write(run, 3)]
        tasks = [asyncio.create_task(group.commit(w)) for w in [blocker, *queued]]
        await settle()
        gate.open.set()
        await asyncio.gather(*tasks)
        assert gate.batches[1:] == [[queued[0], queued[2]], [queued[1]], [queued[3]]]

    asyncio.run(main())


def test_a_batch_stops_at_the_byte_limit_but_always_takes_one_write() -> None:
    async def main() -> None:
        gate = Gate()
        big = [write(payload=b"x" * 600) for _ in range(3)]
        limit = write_bytes(big[0]) + 100
        group = AsyncGroupCommit(gate.send, concurrency=1, max_bytes=limit)
        tasks = [asyncio.create_task(group.commit(w)) for w in [write(), *big]]
        await settle()
        gate.open.set()
        await asyncio.gather(*tasks)
        assert [len(b) for b in gate.batches] == [1, 1, 1, 1]

    asyncio.run(main())


def test_senders_in_flight_never_exceed_the_concurrency() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=3, max_writes=2)
        writes = [write() for _ in range(40)]
        tasks = [asyncio.create_task(group.commit(w)) for w in writes]
        await settle()
        assert gate.in_flight == 3
        gate.open.set()
        assert await asyncio.gather(*tasks) == [outcome(w) for w in writes]
        assert gate.most_in_flight == 3
        assert sorted(id(w) for b in gate.batches for w in b) == sorted(id(w) for w in writes)

    asyncio.run(main())


def test_an_error_of_one_write_reaches_only_its_caller() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        bad = write()
        gate.refuse.add(bad.run_id)
        good = [write() for _ in range(3)]
        tasks = [asyncio.create_task(group.commit(w)) for w in [write(), good[0], bad, *good[1:]]]
        await settle()
        gate.open.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[2], StoreError)
        assert [results[1], *results[3:]] == [outcome(w) for w in good]
        # The failed batch of four was resent one write at a time.
        assert [len(b) for b in gate.batches] == [1, 4, 1, 1, 1, 1]

    asyncio.run(main())


def test_an_unreachable_server_fails_the_whole_batch_without_resending() -> None:
    async def main() -> None:
        gate = Gate()
        gate.error = UnavailableError("no connection")
        group = AsyncGroupCommit(gate.send, concurrency=1)
        tasks = [asyncio.create_task(group.commit(write())) for _ in range(4)]
        await settle()
        gate.open.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, UnavailableError) for r in results)
        assert [len(b) for b in gate.batches] == [1, 3]

    asyncio.run(main())


def test_a_commit_cancelled_while_queued_is_never_sent() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        first, cancelled, kept = write(), write(), write()
        tasks = [asyncio.create_task(group.commit(w)) for w in (first, cancelled, kept)]
        await settle()
        tasks[1].cancel()
        await settle()
        gate.open.set()
        assert await tasks[0] == outcome(first)
        assert await tasks[2] == outcome(kept)
        with pytest.raises(asyncio.CancelledError):
            await tasks[1]
        assert gate.batches == [[first], [kept]]

    asyncio.run(main())


def test_a_cancelled_caller_does_not_cancel_the_batch_it_rides_in() -> None:
    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        writes = [write() for _ in range(4)]
        tasks = [asyncio.create_task(group.commit(w)) for w in writes]
        await settle()
        tasks[0].cancel()  # sending its own write alone: only that send stops
        await settle()
        assert gate.batches == [[writes[0]], writes[1:]]
        tasks[1].cancel()  # its write is in the batch in flight with two others
        await settle()
        gate.open.set()
        assert [await t for t in tasks[2:]] == [outcome(w) for w in writes[2:]]
        for task in tasks[:2]:
            with pytest.raises(asyncio.CancelledError):
                await task
        await group.wait_idle()
        assert len(gate.batches) == 2

    asyncio.run(main())


def test_the_sender_is_freed_after_every_path() -> None:
    async def main() -> None:
        gate = Gate()
        gate.open.set()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        gate.error = UnavailableError("down")
        with pytest.raises(UnavailableError):
            await group.commit(write())
        gate.error = None
        w = write()
        assert await group.commit(w) == outcome(w)  # a leaked slot would hang here

    asyncio.run(asyncio.wait_for(main(), timeout=10))


# -- threads -------------------------------------------------------------------------


class ThreadGate:
    """A blocking send for GroupCommit, recording batches and how many run at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.lock = threading.Lock()
        self.batches: list[list[StepWrite]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.delay = delay
        self.refuse: set[uuid.UUID] = set()

    def send(self, writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        with self.lock:
            self.batches.append(list(writes))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay * random.random())
            if any(w.run_id in self.refuse for w in writes):
                raise StoreError("check constraint violated")
            return [outcome(w) for w in writes]
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.mark.parametrize(("concurrency", "delay"), [(1, 0.0), (1, 0.002), (2, 0.002), (3, 0.0)])
def test_threads_all_get_their_own_outcome_and_batches_form(concurrency: int, delay: float) -> None:
    # A sender slot lost in a hand-over would hang every thread (concurrency 1) or
    # shrink the senders; the join timeout and the in-flight bound catch both.
    gate = ThreadGate(delay=delay)
    group = GroupCommit(gate.send, concurrency=concurrency)
    bad = uuid.uuid4()
    gate.refuse.add(bad)
    results: dict[int, object] = {}

    def worker(index: int) -> None:
        run = bad if index == 7 else uuid.uuid4()
        for step in range(1, 21):
            w = write(run, step)
            try:
                results[index * 100 + step] = group.commit(w) == outcome(w)
            except StoreError:
                results[index * 100 + step] = "error"

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 16 * 20
    assert all(v == "error" for k, v in results.items() if k // 100 == 7)
    assert all(v is True for k, v in results.items() if k // 100 != 7)
    assert gate.most_in_flight <= concurrency
    if delay:
        # With sends that take no time, three senders can keep up with sixteen threads on
        # a busy machine (CI saw it once): batches then need not form.
        assert max(len(b) for b in gate.batches) > 1
    for batch in gate.batches:
        assert len({w.run_id for w in batch}) == len(batch)


def test_a_lone_thread_sends_its_own_write() -> None:
    gate = ThreadGate()
    group = GroupCommit(gate.send, concurrency=2)
    writes = [write(step=i) for i in range(1, 4)]
    assert [group.commit(w) for w in writes] == [outcome(w) for w in writes]
    assert gate.batches == [[w] for w in writes]


def unpacked(step: int) -> StepWrite:
    """A write whose payload is a document to pack, as the store hands it over."""
    return write(step=step)._replace(stored=Payload.of(b'{"t":"' + b"w " * 300 + b'"}'))


def test_threads_pack_their_own_payloads_and_the_async_sender_packs_them() -> None:
    """Threads compress in parallel before they queue; the async twin leaves it to the
    send (for SQLite, the backend's worker thread)."""
    seen: list[bool] = []

    def send(writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        seen.extend(w.stored.is_packed() for w in writes)
        return [outcome(w) for w in writes]

    GroupCommit(send, concurrency=1).commit(unpacked(1))

    async def main() -> None:
        async def async_send(writes: Sequence[StepWrite]) -> list[CommitOutcome]:
            return send(writes)

        await AsyncGroupCommit(async_send, concurrency=1).commit(unpacked(2))

    asyncio.run(main())
    assert seen == [True, False]


def test_pipe19_a_runs_next_write_waits_for_its_write_in_flight_even_with_senders_free() -> None:
    """The overlapped run loop sends step N+1 while N is in flight: with senders free,
    N+1 would go on another connection and could reach the database first (refused by
    its guard); it waits for N, and another run's write does not wait behind it."""

    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=4)
        run, other = uuid.uuid4(), uuid.uuid4()
        first, second, third = write(run, 1), write(run, 2), write(other, 1)
        tasks = [asyncio.create_task(group.commit(w)) for w in (first, second, third)]
        await settle()
        # Step 2 of the run is held back; the other run's write is sent beside step 1.
        assert gate.batches == [[first], [third]]
        gate.open.set()
        assert await asyncio.gather(*tasks) == [outcome(w) for w in (first, second, third)]
        assert gate.batches == [[first], [third], [second]]

    asyncio.run(main())


def chain(run: uuid.UUID, first: int, count: int) -> list[StepWrite]:
    """A run's next ``count`` steps from ``first``, each guarded by the head the one
    before leaves (as the overlapped run loop builds them)."""
    return [
        write(run, step)._replace(expected_step=step - 1, expected_version=1, parent_step=step - 1)
        for step in range(first, first + count)
    ]


def test_a_runs_next_steps_queued_behind_its_write_in_flight_go_together() -> None:
    """The steps the overlapped run loop computed while its write was in flight are the
    next batch, in order, beside other runs' writes; a write of the run that is not the
    next step of the one before it (another writer's) waits for a later batch, and so
    does everything of the run behind it."""

    async def main() -> None:
        gate = Gate()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        run, other = uuid.uuid4(), uuid.uuid4()
        first, *rest = chain(run, 1, 4)
        # Not guarded by step 2's head, and leaving one no step below is guarded by.
        stranger = write(run, 3)._replace(write_version=2)
        after = chain(run, 5, 1)[0]
        queued = [rest[0], write(other, 1), rest[1], stranger, rest[2], after]
        tasks = [asyncio.create_task(group.commit(w)) for w in [first, *queued]]
        await settle()
        gate.open.set()
        results = await asyncio.gather(*tasks)
        assert results == [outcome(w) for w in [first, *queued]]
        assert gate.batches == [
            [first],
            [rest[0], queued[1], rest[1]],
            [stranger],
            [rest[2], after],
        ]

    asyncio.run(main())


def test_a_chain_goes_in_one_batch_when_a_sender_is_free_and_queues_whole_otherwise() -> None:
    async def main() -> None:
        gate = Gate()
        gate.open.set()
        group = AsyncGroupCommit(gate.send, concurrency=1)
        run = uuid.uuid4()
        steps = chain(run, 1, 3)
        assert await group.commit_chain(steps) == [outcome(w) for w in steps]
        assert gate.batches == [steps]
        # Behind a busy sender: queued in order, and taken together.
        gate.open.clear()
        blocker = write()
        busy = asyncio.create_task(group.commit(blocker))
        await settle()
        later = chain(run, 4, 3)
        task = asyncio.create_task(group.commit_chain(later))
        await settle()
        gate.open.set()
        assert await task == [outcome(w) for w in later]
        await busy
        assert gate.batches[1:] == [[blocker], later]

    asyncio.run(main())


def test_a_thread_sends_a_chain_together_when_a_sender_is_free() -> None:
    sent: list[list[StepWrite]] = []

    def send(writes: Sequence[StepWrite]) -> list[CommitOutcome]:
        sent.append(list(writes))
        return [outcome(w) for w in writes]

    group = GroupCommit(send, concurrency=1)
    steps = chain(uuid.uuid4(), 1, 3)
    assert group.commit_chain(steps) == [outcome(w) for w in steps]
    assert sent == [steps]


def test_layers_split_a_batch_so_each_part_holds_a_run_once() -> None:
    run, other, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    steps = chain(run, 1, 3)
    lone = write(other, 1)
    pair = chain(third, 1, 2)
    batch = [steps[0], lone, pair[0], steps[1], pair[1], steps[2]]
    assert layers(batch) == [[steps[0], lone, pair[0]], [steps[1], pair[1]], [steps[2]]]
    assert layers([lone]) == [[lone]]
