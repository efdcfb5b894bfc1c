"""Drive one subject through one workload and take its measurements.

The conversation workload runs every agent as an asyncio task on one event loop; each
turn is two timed writes (the user's message, then the completed turn). In paced mode an
agent waits its turn's pause (1 to 3 s, times ``pace_scale``) before each turn; saturated
mode has no pauses. Reads and resumes are timed afterwards, one at a time, so that they
measure the read and not a queue behind other agents' writes. Every resume is checked
against what was written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.errors import ResultMismatchError
from agentckpt.bench.longrun import LongRunSpec
from agentckpt.bench.measure import Latencies, Summary, timed
from agentckpt.bench.server_cpu import ServerCpu
from agentckpt.bench.subjects import ConversationSubject, LongRunSubject
from agentckpt.bench.workload import ConversationSpec, TurnSpec

__all__ = [
    "ConversationFigures",
    "LongRunFigures",
    "drive_conversations",
    "drive_long_run",
    "write_turn",
]


@dataclass(frozen=True, slots=True)
class ConversationFigures:
    """What one subject did with the conversation workload in one mode."""

    writes: int
    turns: int
    wall_seconds: float
    cpu_seconds: float  # this process's CPU (all threads) during the writes
    write_latency: Summary
    read_latency: Summary
    resume_latency: Summary
    # The server backends' CPU during the writes (PostgreSQL on this machine), or None.
    server_cpu_seconds: float | None = None
    # A resume that also reads every archived message (``resume_all``), for a subject
    # whose resume leaves them unread; None for the others.
    full_read_latency: Summary | None = None

    @property
    def writes_per_second(self) -> float:
        """Writes over the wall time of the whole phase (pauses included when paced)."""
        return self.writes / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def turns_per_second(self) -> float:
        """Completed turns over the wall time of the phase."""
        return self.turns / self.wall_seconds if self.wall_seconds else 0.0


@dataclass(frozen=True, slots=True)
class LongRunFigures:
    """What one subject did with the long run."""

    steps: int
    wall_seconds: float
    cpu_seconds: float
    write_latency: Summary
    read_latency: Summary
    resume_latency: Summary
    server_cpu_seconds: float | None = None

    @property
    def steps_per_second(self) -> float:
        """Steps over the wall time of the run."""
        return self.steps / self.wall_seconds if self.wall_seconds else 0.0


async def _agent(
    subject: ConversationSubject,
    spec: ConversationSpec,
    writes: Latencies,
    pace_scale: float | None,
) -> None:
    for turn in spec.turns:
        if pace_scale is not None:
            await asyncio.sleep(turn.pause * pace_scale)
        await write_turn(subject, spec, turn, writes)


async def write_turn(
    subject: ConversationSubject, spec: ConversationSpec, turn: TurnSpec, writes: Latencies
) -> None:
    """The turn's timed writes: two (user message, completed turn), or one ``turn`` call
    for a subject that stores a whole turn at once (a compiled graph's ``invoke``)."""
    whole = getattr(subject, "whole_turn", None)
    if whole is not None:
        await timed(writes, lambda: whole(spec, turn))
        return
    await timed(writes, lambda: subject.user_message(spec, turn))
    await timed(writes, lambda: subject.complete_turn(spec, turn))


def _check(spec: ConversationSpec, found: tuple[int, Any]) -> None:
    count, last = found
    expected = spec.turns[-1].assistant_content if spec.turns else None
    if count != 2 * len(spec.turns) or (spec.turns and last != expected):
        raise ResultMismatchError(
            f"conversation {spec.conversation_id}: resumed {count} messages ending with "
            f"{str(last)[:40]!r}; wrote {2 * len(spec.turns)} ending with {str(expected)[:40]!r}"
        )


async def drive_conversations(
    subject: ConversationSubject,
    specs: list[ConversationSpec],
    *,
    pace_scale: float | None,
    rounds: int,
    server: ServerCpu | None = None,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> ConversationFigures:
    """Run the conversation workload (paced when ``pace_scale`` is not None), then time
    ``rounds`` reads and resumes of every conversation; ``settle`` is awaited in
    between (the benchmark's last VACUUM after the writes)."""
    for spec in specs:
        await subject.start(spec)
    writes = Latencies()
    if server is not None:
        await server.start()
    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(_agent(subject, spec, writes, pace_scale) for spec in specs))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    server_cpu = await server.stop() if server is not None else None
    if settle is not None:
        await settle()

    reads, resumes, full_reads = Latencies(), Latencies(), Latencies()
    resume_all = getattr(subject, "resume_all", None)
    for spec in specs[: min(len(specs), 10)]:  # warm up connections and statement caches
        await subject.resume(spec)
    for _ in range(rounds):
        for spec in specs:
            await timed(reads, lambda: subject.read_latest(spec))  # noqa: B023
            _check(spec, await timed(resumes, lambda: subject.resume(spec)))  # noqa: B023
            if resume_all is not None:
                _check(spec, await timed(full_reads, lambda: resume_all(spec)))  # noqa: B023
    return ConversationFigures(
        writes=len(writes.samples),
        turns=sum(len(spec.turns) for spec in specs),
        wall_seconds=wall,
        cpu_seconds=cpu,
        write_latency=writes.summary(),
        read_latency=reads.summary(),
        resume_latency=resumes.summary(),
        server_cpu_seconds=server_cpu,
        full_read_latency=full_reads.summary() if resume_all is not None else None,
    )


async def drive_long_run(
    subject: LongRunSubject,
    spec: LongRunSpec,
    *,
    resumes: int,
    server: ServerCpu | None = None,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> LongRunFigures:
    """Run the long run, then time ``resumes`` reads and resumes of its latest state;
    ``settle`` is awaited in between."""
    writes = Latencies()
    if server is not None:
        await server.start()
    cpu, start = time.process_time(), time.perf_counter()
    await subject.run(spec, writes)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    server_cpu = await server.stop() if server is not None else None
    if settle is not None:
        await settle()
    expected = spec.state_at(len(spec.steps))
    reads, resumed = Latencies(), Latencies()
    for _ in range(min(resumes, 10)):
        await subject.resume(spec)
    for _ in range(resumes):
        await timed(reads, lambda: subject.read_latest(spec))
        state = await timed(resumed, lambda: subject.resume(spec))
        if state != expected:
            raise ResultMismatchError(
                f"run {spec.run_id}: the resumed state differs from step {len(spec.steps)}'s"
            )
    return LongRunFigures(
        steps=len(writes.samples),
        wall_seconds=wall,
        cpu_seconds=cpu,
        write_latency=writes.summary(),
        read_latency=reads.summary(),
        resume_latency=resumed.summary(),
        server_cpu_seconds=server_cpu,
    )
