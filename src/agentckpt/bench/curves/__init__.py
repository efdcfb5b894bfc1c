"""Curves (``agentckpt bench --curves``): how each subject's costs move with size.

Commit cost against turn number, bytes stored against turns and steps, throughput
against concurrent agents, resume time of a short and a long conversation, and client
memory with many active runs; :mod:`~agentckpt.bench.curves.plots` draws them as PNGs.
"""

from __future__ import annotations

__all__: list[str] = []
