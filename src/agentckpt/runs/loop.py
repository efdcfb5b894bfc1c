# GENERATED from loop_async.py by scripts/unasync.py; do not edit.
"""The run loop: resume or start a long agent run and commit one checkpoint per step.

``loop.py`` is generated from ``loop_async.py`` by ``scripts/unasync.py``:
edit ``loop_async.py``.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import compress
from typing import Any

import orjson

from agentckpt import _compat
from agentckpt._core.codec import ORJSON_STRICT, decode, encode_trusted
from agentckpt._core.writes import Row, StepWrite
from agentckpt.blobstores.base import BlobStore
from agentckpt.errors import (
    AcknowledgedStepsLostError,
    AgentckptError,
    ConfigurationError,
    ConflictError,
    CorruptDataError,
    FatalError,
    FencedError,
    LeaseLostError,
    NotFoundError,
    OutcomeUnknownError,
    RetriesExhaustedError,
    RunFailedError,
    StoreError,
    TransientError,
    UnavailableError,
)
from agentckpt.records import StepInfo
from agentckpt.redaction import Redactor, record_metadata, redact
from agentckpt.runs.artifacts import Artifacts
from agentckpt.runs.audit import AuditLog
from agentckpt.runs.context import StepContext
from agentckpt.runs.effects import Effects
from agentckpt.runs.lease_terms import Lease, default_owner
from agentckpt.runs.leases import Heartbeat, Leases
from agentckpt.runs.names import named_owner, run_id_for
from agentckpt.runs.offload import (
    OffloadPolicy,
    changed_members,
    encodings_hold_refs,
    encodings_of,
    may_hold_refs,
    ref_uris,
)
from agentckpt.runs.pipeline import Pipeline
from agentckpt.runs.prepared import PreparedStep, Tally
from agentckpt.runs.results import Finish, RunResult
from agentckpt.runs.retry import RetryPolicy
from agentckpt.store.store import RunId, Store, as_run_id

__all__ = ["AgentRun", "StepContext"]

log = logging.getLogger("agentckpt.runs")

# Errors that say nothing about the run itself (the database, the blob store, the
# configuration, or another worker owning the run): they propagate and the run keeps its
# status, so it can be resumed once the cause is fixed.
_NOT_THE_RUNS_FAULT = (
    ConflictError,
    StoreError,
    CorruptDataError,
    FencedError,
    NotFoundError,
    ConfigurationError,
)
# Errors after which the step is simply tried again from the last checkpoint, for as long
# as the store's outage policy (its outage_limit setting) allows.
_STORE_TRANSIENT = (UnavailableError, OutcomeUnknownError)

_UNSET: Any = object()


_CONTAINERS = frozenset({dict, list})


def _fresh(state: Any) -> Any:
    """A deep copy of a committed state (exact: committed states are valid JSON values).

    When orjson encodes the state, its integers are all within 64 bits, which orjson
    also reads back exactly: the codec's scan for longer ones is not needed. An object
    state's members that are str, numbers, booleans or None cannot be mutated: they are
    shared, not copied (most of a state's bytes are usually in its strings), and only
    its containers are copied, in one round trip.
    """
    try:
        if type(state) is not dict:
            return orjson.loads(orjson.dumps(state, None, ORJSON_STRICT))
        copy = dict(state)
        # Which members are containers, found at C speed (no Python loop per member).
        nested = list(map(_CONTAINERS.__contains__, map(type, copy.values())))
        containers = list(compress(copy.values(), nested))
        values = orjson.loads(orjson.dumps(containers, None, ORJSON_STRICT))
        copy.update(zip(compress(copy.keys(), nested), values, strict=True))
        return copy
    except TypeError:
        return decode(encode_trusted(state))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


StepFn = Callable[[StepContext], Any]


class AgentRun:
    """A long agent run driven step by step, with a checkpoint after every step.

    The run is identified by ``run_id``, or by a ``name`` unique per ``agent_id`` (the
    run id is then derived from both, :func:`run_id_for`), so the same call names the
    same run in every process. The first use creates it and commits ``initial_state`` as
    step 0 when it opens; any later use (after a crash, on another machine) resumes from
    the last committed step. With neither, each object starts a new run. A named run's
    default lease ``owner`` is this host and the name, so the same call restarted here
    after a crash takes its lease over at once. Each step's state is committed as a delta
    against the previous one, with a full snapshot every ``snapshot_interval`` steps
    (up to four times later for a state much larger than its changes, see
    :class:`SnapshotPolicy`) that prunes the steps before it, so a run's rows stay bounded
    however long it runs.

    While open, the worker holds the run's lease (renewed by a heartbeat); every commit
    is fenced by the lease epoch, so a worker whose lease was taken over writes nothing.

    Errors raised by the step function:

    - :class:`TransientError`: the state is reloaded from the database and the step
      retried, up to ``retry.max_attempts`` attempts with backoff; then
      :class:`RetriesExhaustedError` and the run is marked failed.
    - an outage (``UnavailableError``, ``OutcomeUnknownError``: the database is
      unreachable, failing over, frozen): the state is reloaded and the step retried
      under the store's :class:`~agentckpt.store.outage_policy.OutagePolicy` (the same
      as the conversations' and the adapters'), for up to the store's ``outage_limit``
      seconds; then the error is re-raised and the run stays active.
    - :class:`FatalError`: the run is marked failed with the error, and it is re-raised.
    - any other exception (a bug, an unstorable state): the run is marked failed with
      the error (it would fail the same way on every resume), and it is re-raised.
    - errors that are not the run's fault (another worker owns it, the database or blob
      store is broken, bad configuration) and interrupts (``KeyboardInterrupt``,
      cancellation) propagate and leave the run active, to be resumed.

    ``overlap=True`` (asyncio only) computes the next steps while the commits of the
    ones before them are made durable, and writes the steps computed meanwhile together,
    in one transaction: at most ``ahead`` steps computed and not yet durable (default 8
    on PostgreSQL, 4 on SQLite), one transaction of the run in flight at a time, steps
    yielded in order once durable; an effect waits for its step's parent to be durable
    (docs/runs.md, "Overlapped steps").

    Example::

        def step(ctx):
            ctx.state["n"] += 1
            return ctx.state if ctx.state["n"] < 10 else Finish(ctx.state)

        result = AgentRun(store, run_id, initial_state={"n": 0}).run(step)
    """

    def __init__(
        self,
        store: Store,
        run_id: RunId | None = None,
        *,
        agent_id: str = "",
        name: str | None = None,
        kind: str = "run",
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        initial_state: Any = _UNSET,
        snapshot_interval: int = 20,
        retry: RetryPolicy | None = None,
        offload: OffloadPolicy | None = None,
        blobs: BlobStore | None = None,
        owner: str | None = None,
        lease_ttl: float = 30.0,
        lease: Lease | None = None,
        heartbeat: bool = True,
        audit: AuditLog | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: Callable[[], float] = random.random,
        redactors: Sequence[Redactor] = (),
        overlap: bool = False,
        ahead: int | None = None,
    ) -> None:
        if type(overlap) is not bool:
            raise ConfigurationError(f"overlap must be True or False, not {overlap!r}")
        if ahead is not None and (type(ahead) is not int or ahead < 1):
            raise ConfigurationError(f"ahead must be an integer >= 1 or None, not {ahead!r}")
        if ahead is not None and not overlap:
            raise ConfigurationError("ahead= bounds the steps overlap=True computes ahead")
        if overlap and not _compat.overlaps:
            raise ConfigurationError(
                "overlap=True needs the asyncio run loop: the threaded loop commits each "
                "step in the thread that computes the next one, so there is nothing to "
                "overlap (use the async API's run loop, or overlap=False)"
            )
        # Step N+1 is computed while step N's commit is made durable (docs/runs.md).
        self.overlap = overlap
        # At most this many steps computed and not yet durable (overlap; None: the
        # pipeline's default for the store's database).
        self.ahead = ahead
        # Applied to every string of each state (and each recorded effect result) before
        # it is stored (agentckpt.redaction); the records go in the step's metadata.
        try:
            self.redactors: tuple[Redactor, ...] = tuple(redactors)
        except TypeError:
            raise ConfigurationError(
                f"redactors must be a list of redactors, not {type(redactors).__name__}"
            ) from None
        if run_id is not None and name is not None:
            raise ConfigurationError("pass run_id or name, not both: a name is a run id")
        if name is not None:
            self.run_id = run_id_for(agent_id, name)
        else:
            self.run_id = as_run_id(run_id) if run_id is not None else uuid.uuid4()
        self.name = name
        # This run's snapshot cadence, passed with each commit: the run shares the
        # caller's store (and its view of the run's head) whatever its interval.
        try:
            self.policy = replace(store.policy, interval=snapshot_interval)
        except ValueError as exc:
            raise ConfigurationError(f"snapshot_{exc}") from None
        self.store = store
        self.agent_id = agent_id
        self.kind = kind
        self.config = config
        self.metadata = metadata
        self.retry = retry or RetryPolicy()
        if lease is not None:
            self.owner = lease.owner
        elif owner is not None:
            self.owner = owner
        else:
            self.owner = named_owner(agent_id, name) if name is not None else default_owner()
        self.lease_ttl = lease.ttl if lease is not None else lease_ttl
        self._initial = initial_state
        self._adopted = lease
        self._use_heartbeat = heartbeat
        self._audit = audit
        self._sleep = sleep or _compat.sleep
        self._rng = rng
        self._leases = Leases(self.store)
        self._effects = Effects(self.store, limits=store.limits, redactors=self.redactors)
        self._artifacts = Artifacts(self.store, self.run_id, blobs, offload or OffloadPolicy())
        self._heartbeat: Heartbeat | None = None
        self._open = False
        self._finished = False
        self._status = "active"
        self._step: int | None = None
        self._state: Any = None
        self._known: set[str] = set()
        # True when ``_state`` is the loop's own object (a copy it made, or the very
        # object a step was given and returned, as committed): the next step is given it
        # without a copy. ``_lent``: a step was given it and has not committed yet, so it
        # may hold that step's uncommitted changes (restored or re-read when it fails).
        self._owned = False
        self._lent = False
        # Step 0, when open() committed it: the first step the iteration yields.
        self._opened_with: StepInfo | None = None
        # Overlap: the commits sent and not yet settled by the loop, which close()
        # lets settle before the lease goes (an iteration left suspended by a break
        # inside ``with run:`` is closed only later).
        self._flights: set[_compat.Flight[StepInfo]] = set()

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> AgentRun:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def lease(self) -> Lease:
        """The lease this worker holds; :class:`LeaseLostError` if the run is not open."""
        if self._heartbeat is None:
            raise LeaseLostError(f"run {self.run_id} is not open in this worker")
        return self._heartbeat.lease

    @property
    def step(self) -> int | None:
        """The last committed step (None before the first)."""
        return self._step

    @property
    def state(self) -> Any:
        """The last committed state (blob references not loaded); do not mutate it.

        It is the object the next step is given when the last step returned the one it
        was given. While a step runs it holds that step's changes, and after a step that
        raised, until the run re-reads it, it may still (when the store's cached head
        was dropped, e.g. by a refused commit).
        """
        return self._state

    def open(self) -> None:
        """Create the run if new, take its lease, start the heartbeat, load its head."""
        if self._open:
            return
        info = self.store.create_run(
            self.run_id,
            agent_id=self.agent_id,
            kind=self.kind,
            config=self.config,
            metadata=self.metadata,
            exist_ok=True,
        )
        if self._adopted is not None:
            if (info.lease_owner, info.lease_epoch) != (self._adopted.owner, self._adopted.epoch):
                raise LeaseLostError(
                    f"run {self.run_id}: the lease of epoch {self._adopted.epoch} was taken "
                    f"over (now epoch {info.lease_epoch}, owner {info.lease_owner!r})"
                )
            lease = self._adopted
        else:
            lease = self._leases.acquire(self.run_id, self.owner, self.lease_ttl)
        self._heartbeat = Heartbeat(self._leases, self.run_id, lease)
        self._open = True
        self._finished = False
        self._status = info.status
        try:
            if self._use_heartbeat:
                self._heartbeat.start()
            self._reload()
        except BaseException:
            self.close()
            raise
        self._emit(
            "run.started",
            {"owner": lease.owner, "epoch": lease.epoch, "step": self._step},
            step=self._step,
        )
        if self._step is None and self._initial is not _UNSET and self._status == "active":
            # Durable before any step runs, so whichever worker resumes the run (this one,
            # or a recovery worker after a crash) starts from it.
            try:
                self._opened_with = self._commit_initial()
            except BaseException:
                self.close()
                raise

    def close(self, *, release: bool = True) -> None:
        """Stop the heartbeat and release the lease (unless it was lost or the run ended).

        With ``release=False`` the lease is left to expire, so no worker takes the run
        over before its ttl has passed (a recovery worker does this after a failure, to
        back off instead of retrying at once).
        """
        if not self._open or self._heartbeat is None:
            return
        self._open = False
        for flight in list(self._flights):
            flight.abandon()
        self._flights.clear()
        heartbeat = self._heartbeat
        heartbeat.stop()
        if heartbeat.lost or self._finished or not release:
            return
        try:
            self._leases.release(self.run_id, heartbeat.lease)
        except AgentckptError as exc:
            log.warning("run %s: could not release the lease (%s); it expires", self.run_id, exc)

    # -- the loop --------------------------------------------------------------------

    def run(self, step_fn: StepFn, *, max_steps: int | None = None) -> RunResult:
        """Run ``step_fn`` step after step until it returns :class:`Finish` or the run
        reaches step ``max_steps``; the run is then marked completed.

        ``step_fn(ctx)`` returns the new state (see :class:`StepContext`). The run
        is opened (lease taken) if it is not open yet, and closed again at the end.
        """
        for _ in self.steps(step_fn, max_steps=max_steps):
            pass
        return RunResult(self.run_id, self._status, self._step or 0, self._state)

    def steps(self, step_fn: StepFn, *, max_steps: int | None = None) -> Iterator[StepInfo]:
        """Like :meth:`run`, yielding each step once it is durable.

        If the run was not open, it is opened here and closed (its lease released) when
        the iteration ends, also by ``break``; the run then stays active. With
        ``with run:`` around the loop the lease is held until the block ends.
        """
        if max_steps is not None and (type(max_steps) is not int or max_steps < 0):
            raise ConfigurationError(
                f"max_steps must be an integer >= 0 or None, got {max_steps!r}"
            )
        opened_here = not self._open
        self.open()
        try:
            yield from self._steps(step_fn, max_steps)
        finally:
            if opened_here:
                self.close()

    def _steps(self, step_fn: StepFn, max_steps: int | None) -> Iterator[StepInfo]:
        if self._status == "failed":
            raise RunFailedError(
                f"run {self.run_id} is marked failed; set its status to 'active' to resume it"
            )
        if self._status != "active":
            return
        if self._opened_with is not None:
            first, self._opened_with = self._opened_with, None
            yield first
        elif self._step is None:
            self._check_lease()
            yield self._commit_initial()
        assert self._step is not None
        if self.overlap:
            for info in Pipeline(self, step_fn, max_steps).steps():
                yield info
            return
        tally = Tally()
        # A step of an earlier iteration failed after it was lent the state, and no
        # clean copy could be made without I/O: re-read it before the next step.
        stale = self._lent
        number = self._step + 1
        try:
            while True:
                try:
                    if stale:
                        self._reread(tally)
                        stale = False
                    assert self._step is not None
                    number = self._step + 1
                    if max_steps is not None and self._step >= max_steps:
                        break
                    self._check_lease()
                    attempt = tally.attempt
                    given = self._lend()
                    ctx = StepContext(self, number, self._step, attempt, given)
                    outcome = step_fn(ctx)
                    finish = isinstance(outcome, Finish)
                    # The commit's span says which retry of the step it is (retry_count).
                    with self.store.telemetry.attempt(attempt - 1):
                        info = self._commit(
                            number, outcome.state if finish else outcome, tally.failures, given
                        )
                except Exception as exc:
                    self._recover(number, exc, tally)
                    stale = True
                    continue
                tally.reset()
                yield info
                if finish:
                    break
        except BaseException:
            self._restore()
            raise
        self._complete()

    def _drop(self, flight: _compat.Flight[StepInfo]) -> None:
        """Let a commit nobody will build on settle, whatever its outcome."""
        try:
            flight.abandon()
        finally:
            self._flights.discard(flight)

    def _fly(self, prepared: PreparedStep) -> _compat.Flight[StepInfo]:
        """Send a prepared step's commit (every commit before it settled) and return it
        in flight, handed to the store's sender already: from the store's plan when it
        builds the write on it now, else the general way (an offload, a redaction, a
        head the store no longer caches), whose commit reads the state while in flight,
        so the next step is computed once it has landed."""
        write = None
        if prepared.plan is not None and prepared.head is not None:
            write = self.store._build_next(
                prepared.head, prepared.plan, self.run_id, prepared.state, epoch=prepared.epoch
            )
        if write is not None:
            flight = _compat.Flight(self._sent(prepared, write))
        else:
            prepared.plan = None
            flight = _compat.Flight(self._send(prepared))
        self._flights.add(flight)
        flight.started()
        return flight

    def _reread(self, tally: Tally) -> None:
        """Re-read the run's last checkpoint before retrying a step."""
        before = self._step
        self._reload()
        if self._step != before:
            tally.failures = 0  # a commit of unknown outcome had landed

    def _recover(self, number: int, exc: Exception, tally: Tally) -> None:
        """After step ``number`` (or its commit) raised ``exc``: return to retry it from
        the last checkpoint (after waiting), or raise to stop the loop."""
        if isinstance(exc, TransientError):
            tally.failures += 1
            self._backoff(number, tally.failures, exc)
            return
        if isinstance(exc, _STORE_TRANSIENT):
            tally.outage = time.monotonic() if tally.outage is None else tally.outage
            tally.outage_retries += 1
            self._ride_out(number, tally.outage, tally.outage_retries, exc)
            return
        if isinstance(exc, FatalError):
            self._fail(number, exc)
            raise exc
        if isinstance(exc, _NOT_THE_RUNS_FAULT):
            raise exc
        self._fail(number, exc)
        raise exc

    # -- internals -------------------------------------------------------------------

    def load(self, value: Any) -> Any:
        """The content of a blob reference (``str`` or ``bytes``); other values as they are."""
        return self._artifacts.load(value)

    def _check_lease(self) -> None:
        if self._heartbeat is not None and self._heartbeat.lost:
            raise LeaseLostError(
                f"run {self.run_id}: lease epoch {self._heartbeat.lease.epoch} was taken over; "
                "this worker stops"
            )

    def _lend(self, ahead: PreparedStep | None = None) -> Any:
        """The state a step is given: the loop's own object as it is, else a copy.

        Giving the loop's own object needs no copy, and nobody else holds it but the
        step that returned it last (a reference it kept past the step sees the next
        one's changes). What was stored cannot change: the commit compares with the
        store's own head (:meth:`Store._base_state`), never with this object, and
        until the step commits the object counts as lent (:meth:`_restore`).

        ``ahead`` (overlap): the step whose commit is in flight, whose state this step
        builds on. Its own object is lent only when its commit was built already (the
        store's plan, whose bytes are made) and nothing reads it before it settles (an
        audit log's ``step.committed`` event does); else a copy.
        """
        if ahead is not None:
            if ahead.owned and ahead.plan is not None and self._audit is None:
                ahead.lent = True
                return ahead.state
            return _fresh(ahead.state)
        if self._owned:
            self._owned, self._lent = False, True
            return self._state
        return _fresh(self._state)

    def _restore(self) -> None:
        """After a failed step that was lent the loop's state: the last committed state
        again, copied from the store's head when it holds it; else the next iteration
        re-reads it (``_lent`` stays set)."""
        if not self._lent or self._step is None:
            return
        base = self.store._base_state(self.run_id, self._step)
        if base is not None:
            self._state, self._lent, self._owned = _fresh(base), False, True

    def _reload(self) -> None:
        self._owned = self._lent = False
        checkpoint = self.store.latest(self.run_id)
        if checkpoint is None:
            self._step, self._state, self._known = None, None, set()
        else:
            self._step, self._state = checkpoint.step, checkpoint.state
            self._known = ref_uris(checkpoint.state)

    def _commit_initial(self) -> StepInfo:
        initial = self._initial() if callable(self._initial) else self._initial
        if initial is _UNSET:
            raise ConfigurationError(
                f"run {self.run_id} has no checkpoint yet; pass initial_state= to start it"
            )
        return self._commit(0, initial, 0, None)

    def _commit(self, number: int, state: Any, failures: int, given: Any) -> StepInfo:
        """Commit the state a step returned (``given``: the object the step was given)."""
        prepared = self._prepare(number, state, failures, given)
        return self._settle(prepared, self._send(prepared))

    def _prepare(
        self,
        number: int,
        state: Any,
        failures: int,
        given: Any,
        *,
        after: PreparedStep | None = None,
    ) -> PreparedStep:
        """Decide the commit of the state a step returned, before any I/O.

        ``after``: the step whose commit is in flight (overlap), the base of this one;
        with the store's plan of it, this step is planned now against that plan's head,
        so its bytes are made before the next step may change its state.
        """
        # Before the artifacts: an offloaded value is stored redacted too.
        state, redacted = redact(state, self.redactors) if self.redactors else (state, ())
        # The members that differ from the last committed state (itself offloaded): the
        # only ones the offload and reference scans need to look at, and the store's plan
        # takes them as its own comparison of the members (it checks the rest exactly).
        # Compared with the store's own head, which no step can have changed (the step's
        # state may be the loop's previous one, lent); else with the previous state.
        if after is not None:
            parent: int | None = after.number
            head = None if after.plan is None else after.plan.head
            known = self._known if after.known is None else after.known
        else:
            parent = self._step
            head = None if parent is None else self.store._run_head(self.run_id, parent)
            known = self._known
        base = None if head is None else head.state
        if base is None and not self._lent and after is None:
            base = self._state
        differs = changed_members(state, base)
        changed = None if differs is None else list(compress(state.values(), differs))
        # One strict encoding of each changed member: the offload check, the reference
        # scan and the plan each made their own.
        encodings = None if changed is None else encodings_of(changed)
        stored, pending = self._artifacts.prepare(state, changed, encodings)
        prepared = PreparedStep(
            number=number,
            parent=parent,
            state=stored,
            given=given,
            failures=failures,
            epoch=self.lease.epoch,
            head=head,
            differs=differs,
            encodings=encodings,
            pending=pending,
            redacted=list(redacted),
            known=None,
            steady=head is not None and differs is not None and stored is state and not redacted,
        )
        if (
            changed is None
            or pending
            or known
            or (encodings_hold_refs(encodings) if encodings is not None else may_hold_refs(changed))
        ):
            prepared.known = ref_uris(stored)
        else:
            # The last state referenced no blob and the changed members add none.
            prepared.known = set()
        if self.overlap and prepared.steady and head is not None and differs is not None:
            # The encodings are of these very values (nothing was offloaded, so
            # ``stored`` is ``state``, and nothing ran in between).
            prepared.plan = self.store._plan_next(
                head, self.run_id, stored, policy=self.policy, changed=differs, encoded=encodings
            )
        return prepared

    def _send(self, prepared: PreparedStep) -> StepInfo:
        """Commit a prepared step; a refusal that is really a takeover is said as one."""
        number, epoch, stored = prepared.number, prepared.epoch, prepared.state
        try:
            if prepared.steady and prepared.head is not None and prepared.differs is not None:
                info = self.store._commit_next(
                    prepared.head,
                    self.run_id,
                    stored,
                    epoch=epoch,
                    policy=self.policy,
                    changed=prepared.differs,
                    encoded=prepared.encodings,
                )
            else:
                pending = prepared.pending
                rows = self._artifacts.persist(pending, self._known) if pending else []
                info = self.store.commit(
                    self.run_id,
                    stored,
                    step=number,
                    expected_head=prepared.parent,
                    epoch=epoch,
                    blobs=rows,
                    policy=self.policy,
                    metadata=record_metadata(number, prepared.redacted) or None,
                    _changed=prepared.differs,
                )
        except ConflictError as exc:
            raise self._refused(number, epoch, exc) from exc
        return self._landed(info)

    def _sent(
        self, prepared: PreparedStep, write: StepWrite, *, sent: _compat.Sent | None = None
    ) -> StepInfo:
        """The outcome of a write the store built already (overlap), refusals said as
        :meth:`_send` says them (``sent``: its database outcome, sent in a chain)."""
        assert prepared.head is not None
        assert prepared.plan is not None
        try:
            info = self.store._send_next(prepared.head, prepared.plan, write, sent=sent)
        except ConflictError as exc:
            raise self._refused(prepared.number, prepared.epoch, exc) from exc
        return self._landed(info)

    def _landed(self, info: StepInfo) -> StepInfo:
        """What follows a commit that landed, before anyone learns it did: a snapshot
        prunes the effects of the steps before it. In the commit's own flight (overlap),
        so an effect of the next step, which waits for that flight, is recorded after
        the prune, never deleted by it."""
        if info.kind == "snapshot" and self.policy.prune:
            try:
                self._effects.prune(self.run_id, info.step)
            except AgentckptError as exc:  # committed already; old effects are only garbage
                log.warning("run %s: could not prune old effects: %s", self.run_id, exc)
        return info

    def _refused(self, number: int, epoch: int, exc: ConflictError) -> ConflictError:
        """The error to raise for a refused commit of step ``number`` under ``epoch``."""
        # A stale owner may trip over the moved head before the epoch check: report
        # what really happened, a takeover, whichever check refused the write.
        if isinstance(exc, FencedError) and not isinstance(exc, LeaseLostError):
            return LeaseLostError(
                f"run {self.run_id}: lease epoch {epoch} was taken over; step {number} "
                f"was not written ({exc})"
            )
        if (
            not isinstance(exc, FencedError | AcknowledgedStepsLostError)
            and self._leases.epoch(self.run_id) != epoch
        ):
            return LeaseLostError(
                f"run {self.run_id}: lease epoch {epoch} was taken over; step {number} "
                "was not written"
            )
        return exc

    def _settle(self, prepared: PreparedStep, info: StepInfo) -> StepInfo:
        """The loop's view after a prepared step committed (``info``)."""
        number, stored = prepared.number, prepared.state
        parent = self._step
        self._step, self._state = number, stored
        # The step returned the object it was given, as stored: the loop's own; unless
        # (overlap) it is lent to the next step already.
        self._owned = prepared.owned and not prepared.lent
        self._lent = prepared.lent
        if prepared.known is not None:
            self._known = prepared.known
        if self._audit is not None:  # the event's record is built only for an audit log
            self._emit(
                "step.committed",
                {
                    "parent_step": parent,
                    "kind": info.kind,
                    "attempt": prepared.failures + 1,
                    "state": stored,
                },
                step=number,
            )
        return info

    def _ride_out(self, number: int, since: float, retries: int, exc: Exception) -> None:
        """Wait before retrying a step the database failed, or re-raise once the outage
        has lasted longer than the store's outage policy allows."""
        self._emit("step.retry", {"attempt": retries, "error": _describe(exc)}, step=number)
        outage = self.store.outage
        if not outage.allows(since, time.monotonic()):
            raise exc
        if outage.observer is not None:
            outage.observer(exc, retries)
        delay = outage.delay(retries, rng=self._rng)
        log.info(
            "run %s step %d: the database failed (%s); retrying from the last checkpoint in "
            "%.2fs (outage for %.1f s of at most %g s)",
            self.run_id,
            number,
            _describe(exc),
            delay,
            time.monotonic() - since,
            outage.limit,
        )
        self._sleep(delay)

    def _backoff(self, number: int, failures: int, exc: Exception) -> None:
        self._emit("step.retry", {"attempt": failures, "error": _describe(exc)}, step=number)
        if not self.retry.allows(failures):
            error = RetriesExhaustedError(
                f"run {self.run_id} step {number}: still failing after {failures} attempts: "
                f"{_describe(exc)}"
            )
            self._fail(number, error)
            raise error from exc
        self.store.telemetry.step_retried(self.store.backend.dialect, exc)
        delay = self.retry.delay(failures, rng=self._rng)
        log.info(
            "run %s step %d: attempt %d failed (%s); retrying from the last checkpoint in %.2fs",
            self.run_id,
            number,
            failures,
            _describe(exc),
            delay,
        )
        self._sleep(delay)

    def _fail(self, number: int, exc: BaseException) -> None:
        message = f"step {number}: {_describe(exc)}"
        self._status = "failed"
        self._emit("run.failed", {"error": message}, step=number)
        try:
            self._leases.finish(self.run_id, self.lease, "failed", message)
            self._finished = True
        except AgentckptError as error:  # never hide the step's own error behind this one
            log.warning("run %s: could not mark the run failed: %s", self.run_id, error)

    def _complete(self) -> None:
        self._leases.finish(self.run_id, self.lease, "completed", None)
        self._finished = True
        self._status = "completed"
        self._emit("run.completed", {}, step=self._step)

    def _emit(self, kind: str, data: Any, *, step: int | None) -> bool:
        if self._audit is None:
            return False
        return self._audit.emit(self.run_id, kind, data, step=step)

    def _event_row(self, kind: str, data: Any, *, step: int | None) -> Row | None:
        """An event's row encoded now, to :meth:`_offer` later (overlap); None without an
        audit log or for data it refuses."""
        if self._audit is None:
            return None
        return self._audit.row(self.run_id, kind, data, step=step)

    def _offer(self, row: Row) -> bool:
        return self._audit is not None and self._audit.offer(row)
