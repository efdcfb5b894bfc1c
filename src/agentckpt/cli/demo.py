"""``agentckpt demo``: kill a sample agent with SIGKILL mid-run and resume it exactly."""

from __future__ import annotations

import argparse
import shlex

from agentckpt.cli.command import EXIT_ERROR, Subparsers, positive_int


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``demo``."""
    cmd = sub.add_parser(
        "demo",
        parents=[common],
        help="kill a sample agent with SIGKILL mid-run, resume it, compare (no setup)",
        description="Runs a deterministic sample agent (scripted model and tools, no "
        "network) as a subprocess, kills it with SIGKILL mid-run, resumes it in a new "
        "process and checks the final state equals an uncrashed run's. Without --url or "
        "$AGENTCKPT_URL it uses the SQLite file agentckpt-demo.db here.",
    )
    cmd.add_argument("--steps", type=positive_int, default=60, help="steps to run (60)")
    cmd.add_argument(
        "--kill-at", type=positive_int, default=37, help="SIGKILL after this step (37)"
    )
    cmd.add_argument(
        "--think",
        type=float,
        default=0.05,
        help="seconds the scripted model takes per step (0.05)",
    )
    cmd.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo and print what happened and what it stored."""
    from agentckpt.cli.output import Progress
    from agentckpt.cli.target import DEMO_URL, open_store, sqlite_path, store_url
    from agentckpt.demo.crash import run_demo
    from agentckpt.ops.units import human_bytes
    from agentckpt.ops.views import run_summaries

    url = store_url(args, default=DEMO_URL)
    path = sqlite_path(url)
    where = f"SQLite file {path.resolve()}" if path else url.split("?")[0]
    print(f"agentckpt demo: store {where}")
    bars: dict[str, Progress] = {}

    def on_step(phase: str, step: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[phase] = Progress(f"   agent ({phase} process)", args.steps)
            bar.done = step - 1
        bar.advance()
        if not bar.enabled and step % 10 == 0:
            print(f"   step {step}/{args.steps} durable", flush=True)

    def say(line: str) -> None:
        for bar in bars.values():
            bar.close()
        print(line, flush=True)

    result = run_demo(
        url, steps=args.steps, kill_at=args.kill_at, think=args.think, say=say, on_step=on_step
    )
    with open_store(url) as store:
        summary = run_summaries(store, run_id=result.run_id, limit=1)[0]
    saving = result.full_state_bytes / max(1, summary.step_bytes)
    print(
        f"5. storage: {summary.step_rows} step rows kept for {result.steps} steps, "
        f"{human_bytes(summary.step_bytes)} of states; {summary.blob_rows} blobs "
        f"({human_bytes(result.blob_bytes)} of tool output in "
        f"{human_bytes(summary.blob_bytes)}); writing the full state at every step would "
        f"have taken {human_bytes(result.full_state_bytes)} ({saving:.0f}x more)"
    )
    if result.resume_ms is not None:
        print(f"   resuming read the state in {result.resume_ms:.1f} ms (one query)")
    flag = f"--url {shlex.quote(url)} "
    print("\nLook at it:")
    print(f"  agentckpt {flag}runs show {result.run_id}")
    print(f"  agentckpt {flag}inspect")
    if not result.equal:
        print("agentckpt demo: error: the resumed run's state differs from an uncrashed run's")
        return EXIT_ERROR
    return 0
