"""The subjects the benchmark compares: agentckpt and its baselines."""

from __future__ import annotations

from agentckpt.bench.subjects.agentckpt import Agentckpt, AgentckptOverlap
from agentckpt.bench.subjects.base import ConversationSubject, LongRunSubject, Place, SubjectKind
from agentckpt.bench.subjects.batched import BatchedFloor
from agentckpt.bench.subjects.encrypted import AgentckptEncrypted
from agentckpt.bench.subjects.floor import Floor
from agentckpt.bench.subjects.graph import AgentckptGraph, LangGraphGraph
from agentckpt.bench.subjects.langgraph import LangGraphSavers
from agentckpt.bench.subjects.seed import SeedMethod

__all__ = [
    "ConversationSubject",
    "LongRunSubject",
    "Place",
    "SubjectKind",
    "all_subjects",
]


def all_subjects(*, ahead: int | None = None) -> list[SubjectKind]:
    """agentckpt first, then baselines (a) seed 000, (b) the floor, (d) the batched
    floor, (c) LangGraph's savers, then the compiled graphs (e) on LangGraph's saver and
    (f) on agentckpt's, then agentckpt encrypted, and with its run loop overlapping steps
    (``ahead``: that loop's window, None for its default)."""
    return [
        Agentckpt(),
        SeedMethod(),
        Floor(),
        BatchedFloor(),
        LangGraphSavers(),
        LangGraphGraph(),
        AgentckptGraph(),
        AgentckptEncrypted(),
        AgentckptOverlap(ahead=ahead),
    ]
