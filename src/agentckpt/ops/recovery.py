"""What needs recovering in a run, and what recovery would do with it now; no I/O.

The rules are the ones the rooms apply when they recover:

- a conversation's open head step is a **pending turn** that starts at its last user
  message (:func:`pending_start`, used by ``conversation.recovery.find_pending``);
  ``recover()`` hands it back to be replayed or continued;
- a tool call nothing answers is **dangling**; ``recover()`` closes it in the messages it
  hands a model with an ``interrupted`` error result (the stored state is unchanged);
- an active conversation with no heartbeat for a while is an **orphan**
  (``list_orphans(older_than_seconds=...)``); an active run whose lease expired is claimed
  and resumed by a ``RecoveryWorker`` with the next lease epoch;
- a LangGraph thread whose last checkpoint has an ``__interrupt__`` write waits for
  ``Command(resume=...)``; its other pending writes are applied on resume, not re-run.

:func:`assess` turns a run's record and its head state into :class:`Flag` values and the
sentences of :attr:`Assessment.actions`, which the inspector shows on a run's page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agentckpt.ops.kinds import CONVERSATION, LANGGRAPH, SESSION
from agentckpt.ops.transcripts import Transcript
from agentckpt.ops.units import human_duration
from agentckpt.records import RunInfo

__all__ = ["FLAGS", "Assessment", "Flag", "assess", "pending_start"]

INTERRUPT_CHANNEL = "__interrupt__"
RESUME_CHANNEL = "__resume__"

FLAGS = {
    "open-turn": "open turn",
    "pending-message": "pending user message",
    "dangling-call": "dangling tool call",
    "lease-expired": "expired lease",
    "orphan": "orphan",
    "interrupt": "waiting on an interrupt",
}
"""Every flag's name and how it is written for people."""


@dataclass(frozen=True, slots=True)
class Flag:
    """One thing about a run that recovery must handle: its name (a key of
    :data:`FLAGS`) and what exactly it is."""

    name: str
    text: str

    @property
    def title(self) -> str:
        """The flag as written for people."""
        return FLAGS.get(self.name, self.name)


@dataclass(frozen=True, slots=True)
class Assessment:
    """The flags of a run and what recovering it now would do, sentence by sentence."""

    flags: tuple[Flag, ...]
    actions: tuple[str, ...]


def pending_start(roles: Sequence[str], *, head_open: bool, head_step: int | None) -> int | None:
    """Where the pending turn starts (the index of its user message), if the head step
    is open; None when there is no pending turn."""
    if not head_open or head_step is None:
        return None
    for start in range(len(roles) - 1, -1, -1):
        if roles[start] == "user":
            return start
    return None


def _silence(run: RunInfo, now: datetime) -> float:
    return max(0.0, (now - run.heartbeat_at).total_seconds())


def assess(
    run: RunInfo,
    transcript: Transcript | None,
    *,
    now: datetime,
    orphan_after: float,
    archived: int = 0,
    pending_channels: Sequence[str] = (),
) -> Assessment:
    """The flags and the recovery of ``run`` at ``now``.

    ``transcript`` is the head state's (None for a state without messages), ``archived``
    the conversation's messages moved to the history table (they come first), and
    ``pending_channels`` the channels of the pending writes of a LangGraph thread's last
    checkpoint. ``orphan_after`` is the heartbeat silence, in seconds, that makes an
    active conversation an orphan.
    """
    flags: list[Flag] = []
    actions: list[str] = []
    entries = transcript.entries if transcript is not None else []
    dangling = transcript.dangling() if transcript is not None else []
    active = run.status == "active"

    if run.kind == CONVERSATION:
        start = pending_start(
            [e.role for e in entries], head_open=run.head_open, head_step=run.head_step
        )
        if run.head_open:
            flags.append(
                Flag("open-turn", f"step {run.head_step} is open: its turn never completed")
            )
        if start is not None:
            partial = len(entries) - start - 1
            flags.append(
                Flag(
                    "pending-message",
                    f"user message #{archived + start} has no complete reply "
                    f"({partial} partial message{'s' if partial != 1 else ''} flushed)",
                )
            )
        if active and _silence(run, now) >= orphan_after:
            flags.append(
                Flag(
                    "orphan",
                    f"no heartbeat for {human_duration(_silence(run, now))}: its writer is "
                    "presumed dead",
                )
            )
        if run.head_step is None:
            actions.append(
                "recover() returns the state the conversation was started with: no turn "
                "was committed yet."
            )
        else:
            actions.append(
                f"recover() reads back {archived + len(entries)} messages as stored at "
                f"step {run.head_step}."
            )
        if start is not None:
            actions.append(
                f"The turn of step {run.head_step} is pending: replay it (drop the partial "
                f"reply and ask the model again from user message #{archived + start}) or "
                "continue it (keep its finished tool calls)."
            )
    elif run.kind == LANGGRAPH:
        interrupts = list(pending_channels).count(INTERRUPT_CHANNEL)
        resumed = RESUME_CHANNEL in pending_channels
        writes = [c for c in pending_channels if c not in (INTERRUPT_CHANNEL, RESUME_CHANNEL)]
        if interrupts and not resumed:
            flags.append(
                Flag(
                    "interrupt",
                    f"{interrupts} interrupt{'s wait' if interrupts != 1 else ' waits'} "
                    "for an answer",
                )
            )
            actions.append(
                "The thread waits on its interrupt: graph.invoke(Command(resume=...), config) "
                "with this thread id continues it from the last checkpoint."
            )
        if writes:
            actions.append(
                f"{len(writes)} pending write{'s' if len(writes) != 1 else ''} of the last "
                "checkpoint are applied when the thread resumes; their tasks do not run again."
            )
        if not interrupts and not writes:
            actions.append(
                "The next graph.invoke with this thread id starts from the last checkpoint "
                f"(step {run.head_step}); nothing is pending."
                if run.head_step is not None
                else "The thread has no checkpoint yet."
            )
    elif run.kind == SESSION:
        actions.append(
            f"get_items() returns the {len(entries)} items as stored at step "
            f"{run.head_step}; a session has nothing to repair."
            if run.head_step is not None
            else "The session holds no items yet."
        )
    else:
        if run.head_open:
            flags.append(Flag("open-turn", f"step {run.head_step} is open (being rewritten)"))
        expired = run.lease_expires_at is not None and run.lease_expires_at < now
        if active and expired:
            flags.append(
                Flag(
                    "lease-expired",
                    f"the lease of {run.lease_owner or 'its worker'} (epoch {run.lease_epoch}) "
                    f"expired {human_duration((now - run.lease_expires_at).total_seconds())} ago"
                    if run.lease_expires_at is not None
                    else "the lease expired",
                )
            )
            actions.append(
                f"A RecoveryWorker registered for agent {run.agent_id!r} claims it (lease epoch "
                f"{run.lease_epoch + 1}, fencing out the old worker) and resumes it from step "
                f"{run.head_step}."
            )
        elif active and run.lease_owner and run.lease_expires_at is not None:
            actions.append(
                f"Leased by {run.lease_owner} (epoch {run.lease_epoch}) for "
                f"{human_duration((run.lease_expires_at - now).total_seconds())} more: nothing "
                "happens until the lease expires."
            )
        elif active:
            actions.append(
                "Active with no lease: a RecoveryWorker claims only expired leases, so it "
                f"resumes when a worker acquires it, from step {run.head_step}."
            )

    if dangling:
        names = ", ".join(sorted({call.name for _, _, call in dangling}))
        flags.append(
            Flag(
                "dangling-call",
                f"{len(dangling)} tool call{'s' if len(dangling) != 1 else ''} without a "
                f"result ({names})",
            )
        )
        if run.kind == CONVERSATION:
            actions.append(
                f"recover() closes the {len(dangling)} dangling call"
                f"{'s' if len(dangling) != 1 else ''} in the messages it hands the model with "
                "an 'interrupted' error result (or re-runs them with your function); the "
                "stored state is not changed."
            )
        elif run.kind == LANGGRAPH:
            actions.append(
                "An AI message asks for tools that have no result yet: resuming the thread "
                "runs the nodes still due."
            )
        else:
            actions.append(
                "A model API may refuse a history with a call that has no output: add one "
                "before sending the history again."
            )
    if not active:
        actions.append(
            f"The run is {run.status}: nothing resumes it; fork it from any kept step to go on."
        )
    if not flags and active:
        actions.append("Nothing needs recovering.")
    return Assessment(tuple(flags), tuple(actions))
