"""The benchmark's own errors."""

from __future__ import annotations

from ..errors import AgentckptError

__all__ = ["BenchmarkError", "ResultMismatchError"]


class BenchmarkError(AgentckptError):
    """The benchmark could not run as asked (a missing server, a bad option)."""


class ResultMismatchError(BenchmarkError):
    """A subject read back something other than what was written: its figures are void."""
