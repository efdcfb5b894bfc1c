# GENERATED from pipeline_async.py by scripts/unasync.py; do not edit.
"""The overlapped run loop (``AgentRun(..., overlap=True)``): the next steps are
computed while the commits of the ones before them are made durable.

``pipeline.py`` is generated from ``pipeline_async.py`` by ``scripts/unasync.py``:
edit ``pipeline_async.py``. (The threaded loop refuses ``overlap=True``; its twin is
never run, and exists so the two loops stay one source.)

Each step is planned against the head its parent's commit will leave (the store's
``_plan_next``), so its bytes are made before the next step may change its state, and
its commit is guarded by that head: if the parent does not land, the database refuses
it and it writes nothing. Steps are yielded in order, each once durable.

How the commits go depends on what sending one costs the event loop:

- **PostgreSQL**: a commit is a round trip the loop does not wait for. Each step's
  commit is sent at once; the steps computed while one is in flight queue behind it,
  and group commit writes them together once it lands (one statement:
  ``commit_chain``). So a chain holds what was computed during one round trip.
- **SQLite**: a commit is work on the loop's own thread (or on the worker thread, whose
  Python waits for the GIL while the loop computes). The steps are held back instead,
  and sent together, in one transaction, once holding the next one would keep the first
  waiting longer than a commit takes (the last chains' time), or the window is full.
  A step whose function takes longer than that (a model call) is sent before the next
  one is computed, as the sequential loop would.

At most ``ahead`` steps are computed and not yet durable.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentckpt import _compat
from agentckpt._core.writes import CommitOutcome, StepWrite
from agentckpt.records import StepInfo
from agentckpt.runs.context import StepContext
from agentckpt.runs.prepared import PreparedStep, Tally
from agentckpt.runs.results import Finish

if TYPE_CHECKING:
    from agentckpt.runs.loop import AgentRun, StepFn

__all__ = ["DEFAULT_AHEAD", "DEFAULT_AHEAD_HELD", "Pipeline"]

# Steps an overlapped run computes ahead of the last durable one, by default. With
# PostgreSQL a chain holds what is computed during one round trip, and the window holds
# the chain in flight and the next one gathering. With SQLite the window is the chain
# held back: each step waits for the ones after it to be computed, so the window trades
# latency for throughput (on the benchmark's long run, chains of 4 did 1.2x to 1.6x the
# seed method's steps/s, of 2 about 1.1x; docs/benchmarks.md).
DEFAULT_AHEAD = 8
DEFAULT_AHEAD_HELD = 4

# The weight of the latest chain's commit time in its moving average.
_WEIGHT = 0.2


class _Entry:
    """An overlapped step's commit: built and held back (``flight`` None), or in flight;
    and the context of the step computed on it, whose held events follow it."""

    __slots__ = ("child", "flight", "pipe", "prepared", "ready", "write")

    def __init__(
        self,
        pipe: Pipeline,
        prepared: PreparedStep,
        *,
        write: StepWrite | None = None,
        flight: _compat.Flight[StepInfo] | None = None,
    ) -> None:
        self.pipe = pipe
        self.prepared = prepared
        self.write = write
        self.flight = flight
        self.child: StepContext | None = None
        self.ready = time.perf_counter()

    def result(self) -> StepInfo:
        """The commit's outcome once durable, or its error; a held-back commit is sent
        first (a step computed on it waits for it: :meth:`StepContext.effect`)."""
        if self.flight is None:
            self.pipe.flush()
        assert self.flight is not None
        return self.flight.result()


def _nth(chain: _compat.Flight[list[CommitOutcome]], index: int) -> CommitOutcome:
    return (chain.result())[index]


class Pipeline:
    """One iteration of an overlapped run's steps (:meth:`AgentRun.steps`)."""

    def __init__(self, run: AgentRun, step_fn: StepFn, max_steps: int | None) -> None:
        self.run = run
        self.step_fn = step_fn
        self.max_steps = max_steps
        # The steps whose commits are in flight (sent, not yet settled), oldest first,
        # and the steps held back (built, not sent), after them.
        self.aloft: deque[_Entry] = deque()
        self.held: list[_Entry] = []
        # See the module's docstring: SQLite's commits hold the loop, PostgreSQL's do
        # not.
        self.linger = run.store.backend.dialect == "sqlite"
        default = DEFAULT_AHEAD_HELD if self.linger else DEFAULT_AHEAD
        self.ahead = default if run.ahead is None else run.ahead
        # The last step function's time, and a chain's commit time (moving average;
        # None before the first), in seconds: how long holding a step back may last.
        self.step_seconds = 0.0
        self.commit_seconds: float | None = None
        # The last chain sent: when, and its last step's entry.
        self.sent: tuple[float, _Entry] | None = None

    def steps(self) -> Iterator[StepInfo]:
        """Compute, commit and yield the run's steps until it finishes, stops at
        ``max_steps`` or raises."""
        run = self.run
        assert run._step is not None
        tally = Tally()
        stale = run._lent
        number = run._step + 1
        # A step the store could not build on its parent's plan (an offload, a
        # redaction, a head it no longer caches): sent the general way once every
        # commit before it has settled, and the next step computed once it has.
        unsent: PreparedStep | None = None
        # A step's error (the step function's, or its preparation's): raised once the
        # commits before it have settled.
        error: tuple[int, Exception] | None = None
        # The step that returned Finish landed: nothing after it is computed.
        finished = False
        try:
            while True:
                try:
                    if stale:
                        run._reread(tally)
                        stale = False
                    assert run._step is not None
                    if unsent is not None and not self.aloft and not self.held:
                        self.aloft.append(_Entry(self, unsent, flight=run._fly(unsent)))
                        unsent = None
                    if error is not None and not self.aloft and not self.held:
                        number, exc = error
                        error = None
                        raise exc
                    last = self.held[-1] if self.held else self.aloft[-1] if self.aloft else None
                    tip = None if last is None else last.prepared
                    parent = run._step if tip is None else tip.number
                    done = (
                        finished
                        or (tip is not None and tip.finish)
                        or (self.max_steps is not None and parent >= self.max_steps)
                    )
                    full = len(self.aloft) + len(self.held) >= self.ahead
                    must = done or full or error is not None or unsent is not None
                    if (
                        self.held
                        and not self.aloft
                        and (not self.linger or must or self._lingered())
                    ):
                        self.flush()
                    if self.aloft and (
                        must
                        or self.linger
                        or self.aloft[0].flight is None  # (never: a sent step has one)
                        or self.aloft[0].flight.done()
                        # A commit the store did not build reads its state in flight.
                        or self.aloft[-1].prepared.plan is None
                        # Not further ahead than the chain in flight, and one more: the
                        # chains grow while the loop computes a chain's steps in less
                        # time than it takes to write one, and no further.
                        or len(self.held) > len(self.aloft)
                    ):
                        number = self.aloft[0].prepared.number  # a failure now is its
                        finishing = self.aloft[0].prepared.finish
                        info = self.land()
                        finished = finished or finishing
                        tally.reset()
                        if self.held and not self.aloft and not self.linger:
                            # The next chain goes as soon as this one has landed, before
                            # the caller handles this step.
                            self.flush()
                        yield info
                        continue
                    if done:
                        break
                    run._check_lease()
                    number = parent + 1
                    # A speculative step (its parent not yet durable) is a first attempt:
                    # the tally is its parent's until that parent is durable.
                    attempt = 1 if tip is not None else tally.attempt
                    failures = 0 if tip is not None else tally.failures
                    given = run._lend(tip)
                    ctx = StepContext(run, number, parent, attempt, given, after=last)
                    if last is not None:
                        last.child = ctx  # its held events follow its parent's commit
                    started = time.perf_counter()
                    try:
                        outcome = self.step_fn(ctx)
                        finish = isinstance(outcome, Finish)
                        state = outcome.state if finish else outcome
                        prepared = run._prepare(number, state, failures, given, after=tip)
                        prepared.finish = finish
                    except Exception as exc:
                        # The steps before it settle first, then this error.
                        error = (number, exc)
                        continue
                    finally:
                        self.step_seconds = time.perf_counter() - started
                    unsent = self._send(prepared)
                except Exception as exc:
                    # Raised before the commits in flight settled (not by a step, whose
                    # error waits for them): nothing may build on them now.
                    self.drop_all()
                    unsent = error = None
                    run._recover(number, exc, tally)
                    stale = True
                    continue
        except BaseException:
            if self.aloft or self.held:
                # Stopped with commits in flight (a break, an error, a cancellation):
                # their outcomes are nobody's now, but they must settle before the
                # lease goes.
                self.drop_all()
                # If one landed, the store's head is past the loop's: re-read on a later
                # iteration (unless the store still holds the loop's last step).
                run._owned, run._lent = False, True
            run._restore()
            raise
        run._complete()

    def _lingered(self) -> bool:
        """Holding the next step back too would keep the first held one waiting longer
        than a commit takes (the next step is guessed to take as long as the last)."""
        waited = time.perf_counter() - self.held[0].ready + self.step_seconds
        return self.commit_seconds is None or waited >= self.commit_seconds

    def _send(self, prepared: PreparedStep) -> PreparedStep | None:
        """Hold a prepared step's commit back (built on its parent's plan) for the next
        chain; the step itself if the store cannot build it so and a commit before it
        is not settled (it goes the general way once they are)."""
        run = self.run
        write = None
        if prepared.plan is not None and prepared.head is not None:
            write = run.store._build_next(
                prepared.head,
                prepared.plan,
                run.run_id,
                prepared.state,
                epoch=prepared.epoch,
                overlapped=not self.linger,
            )
        if write is not None:
            self.held.append(_Entry(self, prepared, write=write))
        elif self.aloft or self.held:
            return prepared
        else:
            self.aloft.append(_Entry(self, prepared, flight=run._fly(prepared)))
        return None

    def flush(self) -> None:
        """Send the held-back steps, together (one transaction when a sender is free)."""
        held, self.held = self.held, []
        if not held:
            return
        run = self.run
        writes = [entry.write for entry in held if entry.write is not None]
        chain = _compat.Flight(run.store._send_chain(writes))
        for index, entry in enumerate(held):
            assert entry.write is not None
            flight = _compat.Flight(run._sent(entry.prepared, entry.write, sent=_nth(chain, index)))
            run._flights.add(flight)
            entry.flight = flight
            self.aloft.append(entry)
        self.sent = (time.perf_counter(), held[-1])
        if not self.linger:
            # Handed to the sender before the next step is computed: a task only
            # starts once the loop runs.
            chain.started()

    def land(self) -> StepInfo:
        """Settle the oldest commit in flight (waiting for it) and take it off; if it
        failed, every later one is dropped with it and its error raised."""
        run = self.run
        entry = self.aloft[0]
        assert entry.flight is not None
        try:
            settled = entry.flight.result()
            run._flights.discard(entry.flight)
            info = run._settle(entry.prepared, settled)
        except BaseException:
            # The ones sent behind it are refused if it did not land; if it did (an
            # unknown outcome), they may have too: a history the re-read reads.
            self.drop_all()
            raise
        self.aloft.popleft()
        if entry.child is not None:
            entry.child.release(offer=True)
        if self.sent is not None and self.sent[1] is entry:
            seconds = time.perf_counter() - self.sent[0]
            average = self.commit_seconds
            self.commit_seconds = (
                seconds if average is None else average + (seconds - average) * _WEIGHT
            )
            self.sent = None
        return info

    def drop_all(self) -> None:
        """Let every commit in flight settle, oldest first, whatever its outcome, and
        forget the held-back ones; the events held by steps computed on them are
        dropped."""
        run = self.run
        held, self.held = self.held, []
        for entry in held:
            if entry.child is not None:
                entry.child.release(offer=False)
        while self.aloft:
            entry = self.aloft.popleft()
            if entry.child is not None:
                entry.child.release(offer=False)
            if entry.flight is not None:
                run._drop(entry.flight)
        # No write the store built for this run is in flight or will be sent now.
        run.store._unbuild(run.run_id)
