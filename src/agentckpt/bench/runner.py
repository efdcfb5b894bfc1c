"""Run every subject through every workload on every backend asked for."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentckpt.bench.content import content_size
from agentckpt.bench.curves.runs import CurveConfig, measure_curves
from agentckpt.bench.driver import drive_conversations, drive_long_run
from agentckpt.bench.longrun import generate_long_run
from agentckpt.bench.results import BackendResults, ConversationCase, LongRunCase
from agentckpt.bench.rounds import median_figures, median_storage
from agentckpt.bench.server_cpu import ServerCpu
from agentckpt.bench.sites import PostgresSite, SqliteSite, Storage
from agentckpt.bench.subjects import Place, SubjectKind, all_subjects
from agentckpt.bench.workload import generate_conversations

__all__ = ["BenchConfig", "run_benchmark"]

T = TypeVar("T")
Log = Callable[[str], None]
Site = PostgresSite | SqliteSite
# Called by a measurement between its writes and its timed reads (see _measure).
Settle = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """What to run; see ``agentckpt bench --help`` for each setting."""

    agents: int = 100
    turns: int = 30
    steps: int = 1000
    modes: tuple[str, ...] = ("paced", "saturated")
    backends: tuple[str, ...] = ("sqlite", "postgresql")
    pg_url: str = "postgresql://127.0.0.1:5432/test"
    seed: int = 0
    pace_scale: float = 1.0
    rounds: int = 3
    run_resumes: int = 200
    pool_size: int = 10
    subjects: tuple[str, ...] = ("agentckpt", "seed000", "floor", "batched", "langgraph")
    # Long-run state shapes: number of keys (30: about 12 KB; 300: about 120 KB).
    state_keys: tuple[int, ...] = (30, 300)
    # The curves to measure after the tables (None: no curves).
    curves: CurveConfig | None = None
    keep: bool = False
    sqlite_dir: Path | None = None
    schema_prefix: str = "bench"
    # Seconds between plain VACUUMs of each subject's tables when the server's autovacuum
    # is off (None: never); see docs/benchmarks.md.
    vacuum_every: float | None = 0.5
    # The overlapped run loop's window (AsyncAgentRun's ahead=; None: its default).
    ahead: int | None = None
    # Rounds of every workload, subjects alternated; figures are medians (--repeat).
    repeat: int = 1


def _vacuum_every(config: BenchConfig, results: BackendResults) -> float | None:
    """The VACUUM interval to emulate autovacuum, or None when the server runs its own."""
    if config.vacuum_every is None or results.server.get("autovacuum") != "off":
        return None
    return config.vacuum_every


async def _case(
    site: Site,
    label: str,
    measure: Callable[[Place, Settle], Awaitable[T]],
    where: str,
    config: BenchConfig,
    results: BackendResults,
    log: Log,
) -> tuple[T, Storage] | None:
    """Measure one subject on a fresh place; on failure record it and return None."""
    try:
        return await _measure(
            site, label, measure, keep=config.keep, vacuum_every=_vacuum_every(config, results)
        )
    except Exception as exc:
        results.errors[where] = f"{type(exc).__name__}: {exc}"
        log(f"{site.dialect}: {where}: FAILED: {exc}")
        return None


async def _measure(
    site: Site,
    label: str,
    measure: Callable[[Place, Settle], Awaitable[T]],
    *,
    keep: bool,
    vacuum_every: float | None,
) -> tuple[T, Storage]:
    place = await site.prepare(label)
    sweeper = None
    if isinstance(site, PostgresSite) and vacuum_every:
        sweeper = asyncio.create_task(_sweep(site, place, vacuum_every))

    async def settle() -> None:
        # The writes are over: one last VACUUM, as autovacuum would run once after them,
        # and no more. Autovacuum leaves a table nobody writes alone; a sweep every
        # vacuum_every seconds during the timed reads put VACUUMs of 12 tables beside
        # about one timed resume in five at load 3 to 9 (on two cores, in the client's
        # own event loop), which no reader on a quiet server meets.
        nonlocal sweeper
        if sweeper is None:
            return
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        sweeper = None
        assert isinstance(site, PostgresSite)
        await site.vacuum(place)

    try:
        figures = await measure(place, settle)
        await settle()
        return figures, await site.storage(place)
    finally:
        if sweeper is not None:
            sweeper.cancel()
        if not keep:
            await site.drop(place)


async def _sweep(site: PostgresSite, place: Place, every: float) -> None:
    # Stands in for autovacuum on a server that has it off: every subject alike gets a
    # plain VACUUM of its tables at this interval, so dead row versions are reusable space
    # as on any server with PostgreSQL's default settings.
    while True:
        await asyncio.sleep(every)
        await site.vacuum(place)


async def _backend(
    config: BenchConfig, site: Site, kinds: list[SubjectKind], log: Log
) -> BackendResults:
    dialect = site.dialect
    results = BackendResults(
        dialect=dialect,
        server=await site.describe(),
        labels={kind.name: kind.label(dialect) for kind in kinds},
        agents=config.agents,
        turns=config.turns,
        steps=config.steps,
        repeat=config.repeat,
    )
    active = []
    for kind in kinds:
        reason = kind.unavailable(dialect)
        if reason:
            results.skipped[kind.name] = reason
            log(f"{dialect}: skipping {kind.label(dialect)}: {reason}")
        else:
            active.append(kind)
    specs = generate_conversations(config.seed, config.agents, config.turns)
    results.content = content_size(specs)
    server = ServerCpu(site.url) if isinstance(site, PostgresSite) else None
    for mode in config.modes:
        pace = config.pace_scale if mode == "paced" else None
        conversation_rounds: dict[str, list[tuple[Any, Storage]]] = {}
        for turn, kind in _rounds(config, active):
            if not getattr(kind, "has_conversations", True):
                continue  # a subject of the long run only

            async def conversations(
                place: Place,
                settle: Settle,
                kind: SubjectKind = kind,
                pace: float | None = pace,
            ) -> Any:
                subject = await kind.conversations(place)
                try:
                    return await drive_conversations(
                        subject,
                        specs,
                        pace_scale=pace,
                        rounds=config.rounds,
                        server=server,
                        settle=settle,
                    )
                finally:
                    await subject.close()

            where = f"{kind.name} conversations {mode}"
            if where in results.errors:
                continue  # failed in an earlier round
            measured = await _case(
                site, f"{kind.name}_conv", conversations, where, config, results, log
            )
            if measured is None:
                conversation_rounds.pop(kind.name, None)
                continue
            figures, storage = measured
            conversation_rounds.setdefault(kind.name, []).append(measured)
            log(
                f"{dialect}: {where}{turn}: {figures.writes} writes in "
                f"{figures.wall_seconds:.1f} s, P99 {figures.write_latency.p99:.1f} ms, "
                f"{storage.bytes / 1e6:.1f} MB"
            )
        for name, measured_rounds in conversation_rounds.items():
            results.conversations.setdefault(mode, {})[name] = ConversationCase(
                median_figures([f for f, _ in measured_rounds]),
                median_storage([st for _, st in measured_rounds]),
                rounds=tuple(f for f, _ in measured_rounds) if config.repeat > 1 else (),
            )
    for keys in config.state_keys:
        await _long_runs(config, site, active, keys, results, server, log)
    if config.curves is not None:
        results.curves = await measure_curves(
            site, active, results.labels, config.curves, log, keep=config.keep
        )
    return results


async def _long_runs(
    config: BenchConfig,
    site: Site,
    kinds: list[SubjectKind],
    keys: int,
    results: BackendResults,
    server: ServerCpu | None,
    log: Log,
) -> None:
    run_spec = generate_long_run(config.seed, config.steps, keys)
    cases = results.long_runs.setdefault(keys, {})
    run_rounds: dict[str, list[tuple[Any, Storage]]] = {}
    for turn, kind in _rounds(config, kinds):
        if not getattr(kind, "has_long_run", True):
            continue  # a subject of the conversation workload only

        async def long_run(place: Place, settle: Settle, kind: SubjectKind = kind) -> Any:
            subject = await kind.long_run(place)
            try:
                return await drive_long_run(
                    subject, run_spec, resumes=config.run_resumes, server=server, settle=settle
                )
            finally:
                await subject.close()

        where = f"{kind.name} long run ({keys} keys)"
        if where in results.errors:
            continue  # failed in an earlier round
        label = f"{kind.name}_run{keys}"
        run_measured = await _case(site, label, long_run, where, config, results, log)
        if run_measured is None:
            run_rounds.pop(kind.name, None)
            continue
        run_figures, storage = run_measured
        run_rounds.setdefault(kind.name, []).append(run_measured)
        log(
            f"{site.dialect}: {where}{turn}: {run_figures.steps} steps in "
            f"{run_figures.wall_seconds:.1f} s, {storage.rows} rows, {storage.bytes / 1e6:.2f} MB"
        )
    for name, measured_rounds in run_rounds.items():
        cases[name] = LongRunCase(
            median_figures([f for f, _ in measured_rounds]),
            median_storage([st for _, st in measured_rounds]),
            rounds=tuple(f for f, _ in measured_rounds) if config.repeat > 1 else (),
        )


def _rounds(config: BenchConfig, kinds: list[SubjectKind]) -> Iterator[tuple[str, SubjectKind]]:
    """Every subject once a round, ``config.repeat`` rounds (``--repeat``): the subjects
    alternate, so each round's meet about the same conditions; with the round's label
    for the log (empty without repeats)."""
    for number in range(1, config.repeat + 1):
        turn = f" (round {number}/{config.repeat})" if config.repeat > 1 else ""
        for kind in kinds:
            yield turn, kind


async def run_benchmark(config: BenchConfig, log: Log) -> list[BackendResults]:
    """Run the configured benchmark; one :class:`BackendResults` per backend."""
    kinds = [kind for kind in all_subjects(ahead=config.ahead) if kind.name in config.subjects]
    out = []
    for backend in config.backends:
        if backend == "postgresql":
            pg_site = PostgresSite(
                config.pg_url, pool_size=config.pool_size, prefix=config.schema_prefix
            )
            out.append(await _backend(config, pg_site, kinds, log))
            continue
        if config.sqlite_dir is not None:
            config.sqlite_dir.mkdir(parents=True, exist_ok=True)
            site = SqliteSite(config.sqlite_dir, pool_size=config.pool_size)
            out.append(await _backend(config, site, kinds, log))
            continue
        with tempfile.TemporaryDirectory(prefix="agentckpt-bench-") as directory:
            site = SqliteSite(Path(directory), pool_size=config.pool_size)
            out.append(await _backend(config, site, kinds, log))
    return out
