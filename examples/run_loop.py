"""A long agent run with checkpoints, on SQLite in a temporary directory (no network).

    python examples/run_loop.py

The agent researches a question in eight steps. Each step is committed before the next
begins; a flaky search fails once and is retried from the last checkpoint; the "email"
side effect is recorded so a replay never sends it twice; fetched pages larger than
4 KB move to the blob store. Half-way the worker stops (as if its process died) and a
new worker resumes the same run from where it stopped.
"""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from pathlib import Path
from typing import Any

from agentckpt import Store
from agentckpt.runs import AgentRun, Finish, RetryPolicy, TransientError, gc_blobs

QUESTION = "Which three cities make the best rail trip?"
flaky_calls: dict[int, int] = {}
outbox: list[str] = []  # the "external system": emails actually sent


def search(query: str, step: int) -> str:
    """A search engine that times out on its first call at step 3."""
    flaky_calls[step] = flaky_calls.get(step, 0) + 1
    if step == 3 and flaky_calls[step] == 1:
        raise TransientError("search timed out")
    return hashlib.sha256(f"{query}/{step}".encode()).hexdigest()[:12]


def send_email(idempotency_key: str, body: str) -> dict[str, str]:
    """Pretend to send an email; a real API would deduplicate by the key."""
    outbox.append(idempotency_key)
    return {"message_id": f"msg-{len(outbox)}", "key": idempotency_key}


def step(ctx: Any) -> Any:
    """One step of the agent: search, read a page, take a note; report at the end."""
    state = ctx.state
    hit = search(QUESTION, ctx.step)
    state["notes"].append(f"step {ctx.step}: result {hit}")
    # A fetched page: well over 4 KB, so it is stored as a blob, not in the checkpoint.
    state["last_page"] = f"<html>page for {hit}</html>" + "lorem ipsum " * 600
    if ctx.step == 8:
        page = ctx.load(state["last_page"])  # lazily loaded and checksum-verified
        receipt = ctx.effect("email-report", lambda key: send_email(key, page[:40]))
        state["answer"] = {"cities": ["Vienna", "Prague", "Berlin"], "email": receipt}
        return Finish(state)
    return state


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'runs.db'}"
        run_id = uuid.uuid4()
        no_wait = RetryPolicy(initial_delay=0.0)

        with Store.connect(url) as store:
            first = AgentRun(
                store,
                run_id,
                agent_id="researcher",
                initial_state={"question": QUESTION, "notes": []},
                snapshot_interval=4,  # small, to show pruning in a short run
                retry=no_wait,
            )
            with first:
                for info in first.steps(step):
                    print(f"worker 1 committed step {info.step} ({info.kind})")
                    if info.step == 4:
                        print("worker 1 stops here, as if its process had died")
                        break

        with Store.connect(url) as store:
            second = AgentRun(
                store, run_id, agent_id="researcher", snapshot_interval=4, retry=no_wait
            )
            print(f"worker 2 resumes after step {store.latest(run_id).step}")
            result = second.run(step)
            print(f"run {result.status} at step {result.step}")
            print(f"answer: {result.state['answer']['cities']}")
            print(f"the page in the state is a reference: {result.state['last_page']['uri']}")
            print(f"search calls at step 3 (one retry): {flaky_calls[3]}")
            print(f"emails sent: {len(outbox)}")
            kept = store.steps(run_id)
            print(f"steps kept: {[info.step for info in kept]}")
            report = gc_blobs(store, grace=0)
            print(f"blob garbage collection freed {len(report.deleted)} unreferenced pages")


if __name__ == "__main__":
    main()
