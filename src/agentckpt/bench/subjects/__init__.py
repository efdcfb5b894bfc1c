"""The subjects the benchmark compares: agentckpt and its baselines."""

from __future__ import annotations

from .agentckpt import Agentckpt
from .base import ConversationSubject, LongRunSubject, Place, SubjectKind
from .floor import Floor
from .langgraph import LangGraphSavers
from .seed import SeedMethod

__all__ = [
    "ConversationSubject",
    "LongRunSubject",
    "Place",
    "SubjectKind",
    "all_subjects",
]


def all_subjects() -> list[SubjectKind]:
    """agentckpt first, then baselines (a) seed 000, (b) the floor, (c) LangGraph."""
    return [Agentckpt(), SeedMethod(), Floor(), LangGraphSavers()]
