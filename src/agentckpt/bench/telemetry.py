"""The cost of telemetry: saturated commit throughput with it off and on, side by side.

    python -m agentckpt.bench.telemetry --backend postgres --agents 32 --seconds 10
    python -m agentckpt.bench.telemetry --backend sqlite --telemetry on --json out.json

``--telemetry both`` (the default) alternates rounds without telemetry (no provider: the
shipped default) and with the OpenTelemetry SDK recording every span and metric (a
``TracerProvider`` with a batch processor into an in-memory exporter, a
``MeterProvider`` with an in-memory reader; ``--prometheus`` adds the Prometheus
registry), on the same database, in pairs whose order turns every round (off-on,
on-off, ...). It reports the median of each mode, the drop between them, and the median
of the pairs' own drops. Agents are asyncio tasks on one ``AsyncStore``, each appending
a message to its own conversation-sized state and committing with no pause
(saturated). The target is at most 5 % lower throughput, by both figures.
``--traces R`` samples a share R of the commits' traces (``ParentBased(TraceIdRatioBased(R))``,
as production deployments configure it; 1: every commit, 0: metrics only). What it
does not measure: a real exporter (OTLP) encodes and sends the spans in the batch
processor's thread, in this process, at a cost of its own; the in-memory exporter only
keeps them. Needs the OpenTelemetry SDK and prometheus-client for the "on" rounds.

``--floor`` puts the SDK's floor in the "on" rounds instead of agentckpt's commit hook:
each commit makes only the SDK calls it must (one histogram point with two attributes,
and for a share ``--traces`` of the commits one recorded span with six), so the drop is
what the OpenTelemetry SDK itself costs, whatever the instrumentation around it.

``--parent`` models an instrumented application: each commit runs inside the
application's own span (its agent turn), a root span that the same sampler decides, so
the commit spans of a trace sampled out are not started. The application's spans are
there in the "off" rounds too (through a tracer provider of the same configuration that
agentckpt is not given), so the drop is what agentckpt's own telemetry costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from agentckpt.bench.subjects.agentckpt import AgentckptConversations
from agentckpt.bench.workload import ConversationSpec, generate_conversations
from agentckpt.errors import RunNotFoundError
from agentckpt.store.store_async import AsyncStore
from agentckpt.telemetry import Telemetry
from agentckpt.telemetry.probes import CommitProbe
from agentckpt.telemetry.spans import NOOP as NOOP_SPAN

__all__ = ["hook_cost", "main", "measure_round", "paired_drops", "sdk_floor"]

TARGET_DROP = 0.05
# Turns of each generated conversation (the benchmark's default for conversations).
CONVERSATION_TURNS = 30


def _tracer_provider(traces: float) -> tuple[Any, Any]:
    """An SDK tracer provider sampling ``traces`` of the traces into an in-memory
    exporter through a batch processor, and the exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    tracer_provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(traces)))
    exporter = InMemorySpanExporter()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    return tracer_provider, exporter


class _FloorProbe(CommitProbe):
    """A commit's hook reduced to the SDK calls a commit must make (see
    :class:`_SdkFloor`): one histogram point, and a span for a sampled share."""

    __slots__ = ()

    def __enter__(self) -> _FloorProbe:
        self._start = time.perf_counter()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        elapsed = time.perf_counter() - self._start
        floor = self._telemetry
        assert isinstance(floor, _SdkFloor)
        floor.published(self, elapsed, exc)


class _SdkFloor(Telemetry):
    """The SDK's floor as a store's telemetry: each commit records one histogram point
    with two attributes and, for a share ``traces`` of the commits, one recorded span
    with the commit span's six attributes, straight through the SDK, and nothing else of
    agentckpt's commit hook (no held observations, no counters, no sampling drawn
    ahead). The other hooks (group-commit batches, resumes) are agentckpt's own."""

    def __init__(self, *, traces: float, tracer_provider: Any, meter_provider: Any) -> None:
        super().__init__(meter_provider=meter_provider, use_global=False)
        self._share = traces
        self._spans = tracer_provider.get_tracer("bench-floor")
        self._histogram: Any = None

    def commit(self, db_system: str, run_id: object, step: int | None) -> CommitProbe:
        """A :class:`_FloorProbe` in place of agentckpt's commit probe."""
        return _FloorProbe(self, db_system, run_id, step)

    def published(self, probe: _FloorProbe, elapsed: float, exc: BaseException | None) -> None:
        """The floor's SDK calls for one ended commit."""
        if self._histogram is None:
            meters = self._meters()
            assert meters is not None
            self._histogram = meters["agentckpt.commit.duration"]
        outcome = "ok" if exc is None else "error"
        self._histogram.record(elapsed, {"db.system": probe.db_system, "outcome": outcome})
        if self._share and random.random() < self._share:
            from opentelemetry import trace

            span = self._spans.start_span(
                "agentckpt.commit",
                kind=trace.SpanKind.CLIENT,
                attributes={
                    "db.system": probe.db_system,
                    "db.operation.name": "commit",
                    "agentckpt.run_id": str(probe.run_id),
                    "agentckpt.step": probe.step or 0,
                    "agentckpt.step.kind": probe._kind,
                    "agentckpt.bytes_written": probe._stored,
                },
            )
            span.end()


def _instrumented(
    *, prometheus: bool = False, traces: float = 1.0, floor: bool = False
) -> tuple[Telemetry, list[Any]]:
    """A Telemetry that records everything into the SDK, and what to shut down after
    (``floor``: the SDK's floor, :class:`_SdkFloor`, instead of agentckpt's hooks)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from agentckpt.telemetry.prometheus import PrometheusMetrics

    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    if floor:
        # Every span it starts is recorded: the floor samples them itself.
        tracer_provider, exporter = _tracer_provider(1.0)
        floored = _SdkFloor(
            traces=traces, tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        return floored, [tracer_provider, meter_provider, exporter]
    tracer_provider, exporter = _tracer_provider(traces)
    telemetry = Telemetry(
        tracer_provider=tracer_provider if traces > 0 else None,
        meter_provider=meter_provider,
        prometheus=PrometheusMetrics() if prometheus else None,
        use_global=False,
    )
    return telemetry, [tracer_provider, meter_provider, exporter]


async def measure_round(
    url: str,
    *,
    agents: int,
    seconds: float,
    telemetry: bool,
    prometheus: bool = False,
    traces: float = 1.0,
    parent: bool = False,
    workload: str = "messages",
    floor: bool = False,
) -> tuple[float, float]:
    """Commits per second of ``agents`` saturated writers for ``seconds``, and the
    process's CPU time per commit in microseconds (steadier than the rate on a shared
    machine: other processes' load moves the rate, much less this). ``parent``: each
    commit inside an application span of its own (see the module's docstring).
    ``workload``: ``messages`` (a short message appended per commit) or
    ``conversations`` (the benchmark's conversations through the conversation API).
    ``floor``: the "on" round publishes through the SDK's floor (:class:`_SdkFloor`)."""
    shutdown: list[Any] = []
    options: dict[str, Any] = {"telemetry": Telemetry(use_global=False)}
    if telemetry:
        options["telemetry"], shutdown = _instrumented(
            prometheus=prometheus, traces=traces, floor=floor
        )
    app: Any = None
    if parent:
        if telemetry:
            app = options["telemetry"].tracer()
        if app is None:  # off, or metrics only: the application traces on its own
            provider, _ = _tracer_provider(traces)
            shutdown.append(provider)
            app = provider.get_tracer("bench-application")
    store = await AsyncStore.connect(url, **options)
    done = 0
    runs: list[uuid.UUID] = []
    try:
        if workload == "messages":
            for _ in range(agents):
                runs.append((await store.create_run(agent_id="bench-telemetry")).run_id)
        # Generated before the clock starts (about half a second of CPU for 32): the
        # round times the commits, not the workload's generation.
        specs = _conversations(agents) if workload == "conversations" else []
        stop = time.monotonic() + seconds

        def turn_span() -> Any:
            return NOOP_SPAN if app is None else app.start_as_current_span("agent.turn")

        async def agent(run_id: uuid.UUID) -> None:
            nonlocal done
            messages: list[dict[str, str]] = []
            while time.monotonic() < stop:
                messages.append({"role": "user", "content": f"message {len(messages)} " * 8})
                with turn_span():
                    await store.commit(run_id, {"messages": messages})
                done += 1

        async def conversation(spec: ConversationSpec) -> None:
            # The benchmark's conversations through the conversation API, as `agentckpt
            # bench` writes them (a commit for the user's message, one for the reply with
            # its tool calls); the same conversation again, under a new id, when one ends.
            nonlocal done
            subject = AgentckptConversations(store)
            while True:
                spec = dataclasses.replace(spec, conversation_id=uuid.uuid4())
                await subject.start(spec)
                runs.append(spec.conversation_id)
                for turn in spec.turns:
                    with turn_span():
                        await subject.user_message(spec, turn)
                    with turn_span():
                        await subject.complete_turn(spec, turn)
                    done += 2
                    if time.monotonic() >= stop:
                        return

        started = time.monotonic()
        cpu = time.process_time()
        if workload == "conversations":
            await asyncio.gather(*(conversation(spec) for spec in specs))
        else:
            await asyncio.gather(*(agent(r) for r in runs))
        elapsed = time.monotonic() - started
        cpu = time.process_time() - cpu
    finally:
        # Whatever happened, the next round starts with none of these runs (the
        # conversations' ids are fixed by their seed).
        for run_id in runs:
            with contextlib.suppress(RunNotFoundError):
                await store.delete_run(run_id)
        await store.close()
        for provider in shutdown:
            provider.shutdown()
    return done / elapsed, cpu / max(done, 1) * 1e6


def paired_drops(off: Sequence[float], on: Sequence[float]) -> list[float]:
    """Each pair's drop, ``1 - on / off``, for the rounds run side by side."""
    return [1 - b / a for a, b in zip(off, on, strict=True)]


@functools.cache
def _conversations(agents: int) -> list[ConversationSpec]:
    """The benchmark's generated conversations for ``agents`` agents (seed 0), once."""
    return generate_conversations(0, agents, CONVERSATION_TURNS)


def hook_cost(*, traces: float | None, commits: int = 20000, repeats: int = 5) -> float:
    """CPU microseconds the commit hooks alone add to one commit (no database): the
    best of ``repeats`` loops of ``commits`` probes, each with an acknowledged step.
    ``traces``: None for no telemetry (the shipped default), 0 for metrics only, else
    the share of traces sampled. Steadier than the saturated rounds on a shared machine:
    it is the fixed cost the rounds' CPU per commit carries."""
    shutdown: list[Any] = []
    telemetry = Telemetry(use_global=False)
    if traces is not None:
        telemetry, shutdown = _instrumented(traces=traces)
    run_id = uuid.uuid4()
    best = float("inf")
    try:
        for _ in range(repeats):
            started = time.process_time()
            for step in range(commits):
                with telemetry.commit("postgresql", run_id, None) as probe:
                    probe.done(step, "delta", 300)
            best = min(best, (time.process_time() - started) / commits * 1e6)
    finally:
        for provider in shutdown:
            provider.shutdown()
    return best


def sdk_floor(*, traces: float, commits: int = 20000, repeats: int = 5) -> float:
    """CPU microseconds the OpenTelemetry SDK alone takes for what a commit must publish,
    with no agentckpt code: one ``Histogram.record`` with the commit histogram's two
    attributes, plus ``traces`` times one recorded span with the commit span's six
    attributes, ended, through a batch processor (best of ``repeats`` loops of
    ``commits`` each). A lower bound: the sampler's decision and the clocks are left out,
    so no instrumentation through the SDK can cost a commit less. ``hook_cost`` minus this
    is agentckpt's own share."""
    from opentelemetry import trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    histogram = meter_provider.get_meter("bench-floor").create_histogram(
        "agentckpt.commit.duration", unit="s"
    )
    tracer_provider, _ = _tracer_provider(1.0)  # every span recorded: one's full cost
    tracer = tracer_provider.get_tracer("bench-floor")
    labels = {"db.system": "postgresql", "outcome": "ok"}
    run_id = str(uuid.uuid4())

    def histograms() -> None:
        for _ in range(commits):
            histogram.record(0.002, labels)

    def spans() -> None:
        for step in range(commits):
            span = tracer.start_span(
                "agentckpt.commit",
                kind=trace.SpanKind.CLIENT,
                attributes={
                    "db.system": "postgresql",
                    "db.operation.name": "commit",
                    "agentckpt.run_id": run_id,
                    "agentckpt.step": step,
                    "agentckpt.step.kind": "delta",
                    "agentckpt.bytes_written": 300,
                },
            )
            span.end()

    def best(loop: Any) -> float:
        fastest = float("inf")
        for _ in range(repeats):
            started = time.process_time()
            loop()
            fastest = min(fastest, (time.process_time() - started) / commits * 1e6)
        return fastest

    try:
        return best(histograms) + (traces * best(spans) if traces > 0 else 0.0)
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print it (and write JSON with ``--json FILE``)."""
    parser = argparse.ArgumentParser(prog="python -m agentckpt.bench.telemetry")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://127.0.0.1:5432/test")
    parser.add_argument("--sqlite-path", default="bench-telemetry.db")
    parser.add_argument("--agents", type=int, default=32, help="concurrent writers (default 32)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (default 3)")
    parser.add_argument(
        "--telemetry",
        choices=("off", "on", "both"),
        default="both",
        help="off: no provider (the default install); on: the SDK records everything",
    )
    parser.add_argument(
        "--prometheus",
        action="store_true",
        help="the 'on' rounds also feed a Prometheus registry (both pipelines at once)",
    )
    parser.add_argument(
        "--traces",
        type=float,
        default=1.0,
        metavar="RATIO",
        help="the 'on' rounds sample this share of traces (default 1.0: every commit "
        "has a span; 0: metrics only)",
    )
    parser.add_argument(
        "--workload",
        choices=("messages", "conversations"),
        default="messages",
        help="messages: a short message appended per commit (the smallest commits); "
        "conversations: the benchmark's conversations through the conversation API, as "
        "agentckpt bench writes them",
    )
    parser.add_argument(
        "--parent",
        action="store_true",
        help="each commit inside the application's own span, sampled at --traces, in "
        "both modes (the drop is then agentckpt's telemetry alone)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="the 'on' rounds make only the SDK calls a commit must (a histogram point, "
        "and a span for --traces of the commits) instead of agentckpt's commit hook: "
        "the SDK's own floor, as a throughput drop",
    )
    parser.add_argument(
        "--hooks",
        action="store_true",
        help="only time the commit hooks alone (no database): off, metrics only, "
        "--traces sampled, every trace; and the SDK's own calls for each (its floor)",
    )
    parser.add_argument(
        "--hook-commits",
        type=int,
        default=20000,
        metavar="N",
        help="with --hooks: commits per timed loop (default 20000; best of 5 loops)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.hooks:
        configurations = {"off": None, "metrics": 0.0, f"traces {args.traces:g}": args.traces}
        configurations["traces 1"] = 1.0
        costs = {
            name: round(hook_cost(traces=t, commits=args.hook_commits), 2)
            for name, t in configurations.items()
        }
        for name, cost in costs.items():
            print(f"commit hooks, {name}: {cost:.2f} us CPU per commit")
        floors = {
            name: round(sdk_floor(traces=t, commits=args.hook_commits), 2)
            for name, t in configurations.items()
            if t is not None
        }
        for name, cost in floors.items():
            print(f"SDK floor (the SDK's own calls, no agentckpt code), {name}: {cost:.2f} us")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump({"hooks_us_per_commit": costs, "sdk_floor_us": floors}, out, indent=2)
        return 0
    if args.backend == "postgres":
        url = f"{args.pg_url}?schema=bench_telemetry"
    else:
        url = f"sqlite:///{args.sqlite_path}"
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.telemetry]
    results: dict[str, list[float]] = {"off": [], "on": []}
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    for n in range(args.rounds):
        # Rounds of the two modes in pairs, the order turned every other round (off-on,
        # on-off, ...): a machine that slows down or speeds up through the run then
        # weighs on both modes alike, and each pair's ratio is its own comparison.
        for on in modes if n % 2 == 0 else modes[::-1]:
            rate, per_commit = asyncio.run(
                measure_round(
                    url,
                    agents=args.agents,
                    seconds=args.seconds,
                    telemetry=on,
                    prometheus=args.prometheus,
                    traces=args.traces,
                    parent=args.parent,
                    workload=args.workload,
                    floor=args.floor,
                )
            )
            results["on" if on else "off"].append(rate)
            cpu["on" if on else "off"].append(per_commit)
            print(
                f"round {n + 1} telemetry {'on ' if on else 'off'}: {rate:,.0f} commits/s, "
                f"{per_commit:,.0f} us CPU per commit"
            )
    report: dict[str, Any] = {
        "backend": args.backend,
        "agents": args.agents,
        "seconds": args.seconds,
        "prometheus": args.prometheus,
        "traces": args.traces,
        "parent": args.parent,
        "workload": args.workload,
        "floor": args.floor,
        "rounds": {k: [round(v, 1) for v in vs] for k, vs in results.items() if vs},
    }
    medians = {k: statistics.median(vs) for k, vs in results.items() if vs}
    report["median"] = {k: round(v, 1) for k, v in medians.items()}
    cpu_medians = {k: statistics.median(vs) for k, vs in cpu.items() if vs}
    report["cpu_us_per_commit"] = {k: round(v, 1) for k, v in cpu_medians.items()}
    if "off" in medians and "on" in medians:
        drop = 1 - medians["on"] / medians["off"]
        report["drop"] = round(drop, 4)
        # The median of the rounds' own drops (each "on" round against the "off" round
        # of its pair): steadier than the drop between the two medians when the
        # machine's speed drifts, which it does on a shared host.
        paired = paired_drops(results["off"], results["on"])
        report["paired_drops"] = [round(d, 4) for d in paired]
        report["paired_drop"] = round(statistics.median(paired), 4)
        report["target_met"] = drop <= TARGET_DROP and report["paired_drop"] <= TARGET_DROP
        cpu_extra = cpu_medians["on"] / cpu_medians["off"] - 1
        report["cpu_increase"] = round(cpu_extra, 4)
        print(
            f"median off {medians['off']:,.0f}/s, on {medians['on']:,.0f}/s: "
            f"{drop * 100:+.1f} % lower with telemetry; median of the pairs' drops "
            f"{report['paired_drop'] * 100:+.1f} % (target <= {TARGET_DROP * 100:g} % for "
            f"both); CPU per commit {cpu_medians['off']:,.0f} -> {cpu_medians['on']:,.0f} "
            f"us ({cpu_extra * 100:+.1f} %)"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
