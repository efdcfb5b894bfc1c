"""``agentckpt bench``: agentckpt measured side by side with its baselines.

Two workloads (seeded, deterministic): 100 concurrent agents x 30 turns of seed 000
conversations (paced and saturated), and 1000-step runs over a 30-key and a 300-key
state. Subjects: agentckpt (through its conversation and run-loop APIs), (a) the seed
articles' own methods, (b) the floor, a bare insert of the new bytes, (d) the batched
floor, the same insert group-committed as agentckpt commits, (c) LangGraph's PostgreSQL
or SQLite checkpointer when installed, and, opt-in, a compiled LangGraph graph on
LangGraph's saver (e) and on ``AgentckptSaver`` (f). ``--curves`` adds how the costs
move with size (:mod:`agentckpt.bench.curves`). See ``docs/benchmarks.md``.

Entry point: :func:`agentckpt.bench.cli.main` (``python -m agentckpt.bench``).
"""

from __future__ import annotations

__all__: list[str] = []
