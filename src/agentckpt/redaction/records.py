"""What was redacted, per step: JSON paths and kinds, never the values.

The records of a step go into the run's metadata under ``redactions.<step>`` in the same
transaction as the step (metadata keys replace, so each write of a step carries all of
that step's records so far).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RECORD_PREFIX", "Redaction", "record_metadata", "records_in"]

RECORD_PREFIX = "redactions."


@dataclass(frozen=True, slots=True)
class Redaction:
    """One redacted value: where it was (a JSON Pointer into the stored value) and what
    kind of value it was (``email``, ``openai_key``, a custom redactor's name)."""

    path: str
    kind: str

    def to_json(self) -> dict[str, str]:
        """The record as stored: ``{"path": ..., "kind": ...}``."""
        return {"path": self.path, "kind": self.kind}


def record_metadata(step: int, redactions: Sequence[Redaction]) -> dict[str, Any]:
    """The metadata entry that records ``redactions`` for ``step`` (empty if none)."""
    if not redactions:
        return {}
    unique = list(dict.fromkeys(redactions))
    return {f"{RECORD_PREFIX}{step}": [r.to_json() for r in unique]}


def records_in(metadata: Mapping[str, Any]) -> dict[int, list[Redaction]]:
    """The redaction records of a run's metadata, by step, in step order."""
    found: dict[int, list[Redaction]] = {}
    for key, value in metadata.items():
        if not key.startswith(RECORD_PREFIX) or not isinstance(value, list):
            continue
        suffix = key[len(RECORD_PREFIX) :]
        if not suffix.isdigit():
            continue
        found[int(suffix)] = [
            Redaction(str(item.get("path", "")), str(item.get("kind", "")))
            for item in value
            if isinstance(item, dict)
        ]
    return dict(sorted(found.items()))
