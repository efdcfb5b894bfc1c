"""Measure the curves: each subject on a fresh place, one curve at a time.

- Commit cost: one chat (:func:`~agentckpt.bench.workload.generate_chats`, about 1 KB
  of new JSON a turn) of ``turns`` turns, written turn after turn; each turn's client CPU
  (``time.process_time``) and wall time, divided by its commits. agentckpt runs twice:
  through the conversation API, and through a hint-free ``Store.commit`` of the full state.
  Bytes stored are probed every tenth of the way (after a plain VACUUM on PostgreSQL);
  resume is timed at turn 30 and at the last turn (for agentckpt's conversation API also
  the full read of every archived message, ``resume_all``, as its own row).
- Bytes against steps: the 30-key long run of ``steps`` steps, probed every tenth.
- Throughput against agents: saturated chats for 1, 10, 100 and 1,000 agents.
- Memory: ``runs`` runs with one committed step each on one ``AsyncStore``, in a fresh
  interpreter (:mod:`~agentckpt.bench.curves.memory`); its RSS before and after, and how
  many heads its cache holds.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentckpt.bench.curves.model import (
    FULL_READ,
    BytesCurve,
    CommitCurve,
    Curves,
    Memory,
    ResumeScaling,
    ThroughputCurve,
)
from agentckpt.bench.driver import drive_conversations, write_turn
from agentckpt.bench.errors import ResultMismatchError
from agentckpt.bench.longrun import generate_long_run
from agentckpt.bench.measure import Latencies, timed
from agentckpt.bench.sites import PostgresSite, SqliteSite
from agentckpt.bench.subjects import ConversationSubject, Place, SubjectKind
from agentckpt.bench.subjects.agentckpt import Agentckpt, store_url
from agentckpt.bench.workload import ConversationSpec, generate_chats

__all__ = ["CurveConfig", "measure_curves"]

Site = PostgresSite | SqliteSite
Log = Callable[[str], None]
SHORT = 30  # the short conversation whose resume the long one is compared with
STORE_COMMIT = "agentckpt-commit"


@dataclass(frozen=True, slots=True, kw_only=True)
class CurveConfig:
    """Sizes of the curves."""

    turns: int = 1000
    steps: int = 10_000
    agents: tuple[int, ...] = (1, 10, 100, 1000)
    # Turns per agent in the throughput curve: this many writes in all, at least 3 turns.
    throughput_turns: int = 200
    memory_runs: int = 10_000
    resumes: int = 300
    seed: int = 0


Resume = Callable[[ConversationSpec], Awaitable[tuple[int, Any]]]


async def _resumes(resume: Resume, spec: ConversationSpec, turns: int, n: int) -> Any:
    sample = Latencies()
    for _ in range(n):
        count, _last = await timed(sample, lambda: resume(spec))
        if count != 2 * turns:
            raise ResultMismatchError(f"resume after {turns} turns found {count} messages")
    return sample.summary()


def _resume_kinds(subject: ConversationSubject, name: str) -> dict[str, Resume]:
    """The resumes to time, by row: the subject's own, and its full read if it has one."""
    kinds: dict[str, Resume] = {name: subject.resume}
    resume_all = getattr(subject, "resume_all", None)
    if resume_all is not None:
        kinds[FULL_READ] = resume_all
    return kinds


async def _commit_curve(
    site: Site,
    place: Place,
    subject: ConversationSubject,
    spec: ConversationSpec,
    config: CurveConfig,
    names: tuple[str, str],
    curves: Curves,
) -> None:
    curve, stored = CommitCurve(*names), BytesCurve(*names)
    every = max(len(spec.turns) // 10, 1)
    resumes = _resume_kinds(subject, names[0])
    short: dict[str, Any] = {}
    await subject.start(spec)
    writes = Latencies()
    for turn in spec.turns:
        before = len(writes.samples)
        cpu = time.process_time()
        await write_turn(subject, spec, turn, writes)
        cpu = time.process_time() - cpu
        commits = len(writes.samples) - before
        curve.cpu_ms.append(1000 * cpu / commits)
        curve.wall_ms.append(1000 * sum(writes.samples[before:]) / commits)
        if turn.number % every == 0 or turn.number == len(spec.turns):
            stored.points.append((turn.number, await asyncio.to_thread(site.bytes_now, place)))
        if turn.number == min(SHORT, len(spec.turns)):
            for row, resume in resumes.items():
                short[row] = await _resumes(resume, spec, turn.number, config.resumes)
    curves.commit_cost.append(curve)
    curves.bytes_by_turn.append(stored)
    for row, resume in resumes.items():
        final = await _resumes(resume, spec, len(spec.turns), config.resumes)
        if row in short:
            curves.resume.append(
                ResumeScaling(
                    row,
                    min(SHORT, len(spec.turns)),
                    len(spec.turns),
                    short[row].p50,
                    short[row].p99,
                    final.p50,
                    final.p99,
                )
            )


async def _on_place(
    site: Site, label: str, work: Callable[[Place], Awaitable[None]], keep: bool
) -> None:
    place = await site.prepare(label)
    try:
        await work(place)
    finally:
        if not keep:
            await site.drop(place)


async def _guard(curves: Curves, where: str, work: Awaitable[None], log: Log) -> None:
    try:
        await work
    except Exception as exc:
        curves.errors[where] = f"{type(exc).__name__}: {exc}"
        log(f"{where}: FAILED: {exc}")


def _conversation_opener(
    kind: SubjectKind, api: str
) -> Callable[[Place], Awaitable[ConversationSubject]]:
    if api == STORE_COMMIT:
        assert isinstance(kind, Agentckpt)
        return kind.store_commits
    return kind.conversations


async def _bytes_by_step(
    site: Site, kind: SubjectKind, label: str, config: CurveConfig, curves: Curves, keep: bool
) -> None:
    spec = generate_long_run(config.seed, config.steps)
    every = max(config.steps // 10, 1)
    curve = BytesCurve(kind.name, label)

    async def work(place: Place) -> None:
        subject = await kind.long_run(place)
        try:
            probe = _StepProbe(lambda: site.bytes_now(place), every, curve)
            await subject.run(spec, probe)
        finally:
            await subject.close()

    await _on_place(site, f"{kind.name}_crvrun", work, keep)
    curves.bytes_by_step.append(curve)


class _StepProbe(Latencies):
    """A latency sample that measures bytes stored every ``every`` steps.

    The probe is synchronous and runs inside the subject's step loop, so the event loop
    (and with it every write) waits for it; its time is outside every timed write.
    """

    def __init__(self, probe: Callable[[], int], every: int, curve: BytesCurve) -> None:
        super().__init__()
        self._probe, self._every, self._curve = probe, every, curve

    def add(self, seconds: float) -> None:
        """Record the step; probe the bytes stored at every ``every``-th."""
        super().add(seconds)
        if len(self.samples) % self._every == 0:
            self._curve.points.append((len(self.samples), self._probe()))


async def _throughput(
    site: Site,
    kind: SubjectKind,
    label: str,
    config: CurveConfig,
    curves: Curves,
    keep: bool,
) -> None:
    curve = ThroughputCurve(kind.name, label)
    for agents in config.agents:
        turns = max(3, config.throughput_turns // agents)
        specs = generate_chats(config.seed, agents, turns)

        async def work(place: Place, specs: list[ConversationSpec] = specs) -> None:
            subject = await kind.conversations(place)
            try:
                figures = await drive_conversations(subject, specs, pace_scale=None, rounds=0)
            finally:
                await subject.close()
            curve.points.append((len(specs), figures.writes_per_second, figures.turns_per_second))

        await _on_place(site, f"{kind.name}_crvtp", work, keep)
    curves.throughput.append(curve)


async def _memory(site: Site, config: CurveConfig, keep: bool) -> Memory:
    found: list[Memory] = []

    async def work(place: Place) -> None:
        # A fresh interpreter: this one reuses memory it freed, so its RSS would not grow.
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentckpt.bench.curves.memory",
            store_url(place),
            str(config.memory_runs),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            raise ResultMismatchError(f"the memory probe failed: {err.decode()[-500:]}")
        figures = json.loads(out)
        found.append(
            Memory(
                figures["runs"],
                figures["rss_before"],
                figures["rss_after"],
                figures["cached_heads"],
                figures["cache_limit"],
            )
        )

    await _on_place(site, "agentckpt_crvmem", work, keep)
    return found[0]


async def measure_curves(
    site: Site,
    kinds: list[SubjectKind],
    labels: dict[str, str],
    config: CurveConfig,
    log: Log,
    *,
    keep: bool = False,
) -> Curves:
    """Every curve for ``kinds`` on ``site``; a failing curve is recorded, not raised."""
    curves = Curves(turns=config.turns, steps=config.steps)
    spec = generate_chats(config.seed, 1, config.turns)[0]
    apis: list[tuple[SubjectKind, str, str]] = []
    talkers = [kind for kind in kinds if getattr(kind, "has_conversations", True)]
    for kind in talkers:
        apis.append((kind, kind.name, labels[kind.name]))
        # The plain store's figure, once: the overlapped and encrypted subjects are
        # Agentckpt too, and would measure it again under the same name.
        if type(kind) is Agentckpt:
            apis.append((kind, STORE_COMMIT, "agentckpt Store.commit (hint-free)"))
    for kind, name, label in apis:

        async def commit_cost(
            place: Place, kind: SubjectKind = kind, name: str = name, label: str = label
        ) -> None:
            subject = await _conversation_opener(kind, name)(place)
            try:
                await _commit_curve(site, place, subject, spec, config, (name, label), curves)
            finally:
                await subject.close()

        where = f"curve: {name} commit cost"
        await _guard(
            curves,
            where,
            _on_place(site, f"{name.replace('-', '_')}_crvconv", commit_cost, keep),
            log,
        )
        log(f"{site.dialect}: {where}: {config.turns} turns")
    for kind in kinds:
        if not getattr(kind, "has_long_run", True):
            continue
        where = f"curve: {kind.name} bytes by step"
        await _guard(
            curves,
            where,
            _bytes_by_step(site, kind, labels[kind.name], config, curves, keep),
            log,
        )
        log(f"{site.dialect}: {where}: {config.steps} steps")
    for kind in talkers:
        where = f"curve: {kind.name} throughput"
        await _guard(
            curves, where, _throughput(site, kind, labels[kind.name], config, curves, keep), log
        )
        log(f"{site.dialect}: {where}: agents {', '.join(map(str, config.agents))}")
    if any(isinstance(kind, Agentckpt) for kind in kinds):
        try:
            curves.memory = await _memory(site, config, keep)
            log(f"{site.dialect}: curve: memory with {config.memory_runs} runs")
        except Exception as exc:
            curves.errors["curve: memory"] = f"{type(exc).__name__}: {exc}"
    return curves
