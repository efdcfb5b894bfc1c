"""The benchmark's own errors; they are not part of the library's exception tree."""

from __future__ import annotations

__all__ = ["BenchmarkError", "ResultMismatchError"]


class BenchmarkError(Exception):
    """The benchmark could not run as asked (a missing server, a bad option)."""


class ResultMismatchError(BenchmarkError):
    """A subject read back something other than what was written: its figures are void."""
