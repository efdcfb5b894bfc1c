"""The batched floor (d) and the compiled-graph subjects (e), (f), on real databases."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from agentckpt.bench import cli
from agentckpt.bench.longrun import generate_long_run
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.subjects.batched import BatchedFloor
from agentckpt.bench.subjects.graph import LangGraphGraph


def test_batched_floor_sends_queued_writes_together(tmp_path: Path) -> None:
    path = tmp_path / "batched.db"

    async def main() -> tuple[int, int]:
        subject = await BatchedFloor().conversations(Place("sqlite", str(path), str(path), 1))
        try:
            key = uuid.uuid4()
            await asyncio.gather(*(subject.insert(key, n, b'{"n": %d}' % n) for n in range(50)))
            return subject.batcher.batches, len(await subject.read(key))
        finally:
            await subject.close()

    batches, rows = asyncio.run(main())
    assert rows == 50
    # The first write goes alone; the 49 queued behind it go in batches of at most 64.
    assert batches == 2
    with sqlite3.connect(path) as conn:
        seqs = [row[0] for row in conn.execute("SELECT seq FROM floor_writes ORDER BY seq")]
    assert seqs == list(range(50))


def test_the_300_key_shape_is_about_100_kb_and_changes_one_to_three_keys() -> None:
    spec = generate_long_run(0, 50, 300)
    assert len(spec.initial) == 300
    size = len(json.dumps(spec.initial))
    assert 90_000 < size < 140_000
    assert all(1 <= len(changes) <= 3 for changes in spec.steps)
    # The 30-key shape is the stream it always was (key names and all).
    assert sorted(generate_long_run(0, 1).initial)[:2] == ["key_00", "key_01"]


@pytest.mark.skipif(
    LangGraphGraph().unavailable("sqlite") is not None, reason="langgraph is not installed"
)
def test_compiled_graphs_run_one_invoke_per_turn(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    code = cli.main(
        [
            "--quick",
            "--backend",
            "sqlite",
            "--mode",
            "saturated",
            "--subjects",
            "agentckpt,graph,graph_agentckpt",
            "--state-keys",
            "30",
            "--sqlite-dir",
            str(tmp_path),
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    backend = json.loads(out.read_text())["backends"]["sqlite"]
    assert backend["errors"] == {}
    cases = backend["conversation"]["saturated"]
    for name in ("graph", "graph_agentckpt"):
        assert cases[name]["writes"] == cases[name]["turns"] == 4 * 3  # one ainvoke a turn
        assert cases[name]["resume_latency"]["count"] == 4
        assert cases[name]["storage"]["bytes"] > 0
    assert cases["agentckpt"]["writes"] == 2 * 4 * 3
    # The graphs run the conversation workload only.
    assert set(backend["long_run"]["30_keys"]) == {"agentckpt"}
    assert backend["subjects"]["graph"] == "(e) graph-sqlite"
