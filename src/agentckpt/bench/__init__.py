"""``agentckpt bench``: agentckpt measured side by side with its baselines.

Two workloads (seeded, deterministic): 100 concurrent agents x 30 turns of seed 000
conversations (paced and saturated), and one 1000-step run over a 30-key state. Subjects:
agentckpt (through its conversation and run-loop APIs), (a) the seed articles' own
methods, (b) the floor, a bare insert of the new bytes, and (c) LangGraph's PostgreSQL or
SQLite checkpointer when installed. See ``docs/benchmarks.md``.

Entry point: :func:`agentckpt.bench.cli.main` (``python -m agentckpt.bench``).
"""

from __future__ import annotations

__all__: list[str] = []
