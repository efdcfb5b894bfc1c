"""Side effects recorded under (run, step, key): the pure part of the effect journal.

An effect is an external action (send an email, charge a card, call an API) whose result
is recorded in the ``effects`` table. When a step is replayed after a crash or a
transient error, the recorded result is returned instead of acting again.

The at-least-once window: if the process dies after the action ran but before its
result was recorded, the replay runs the action again. No library can close that window
from the outside; the external system can, if it deduplicates by an idempotency key.
:func:`idempotency_key` gives the same key for the same (run, step, key) in every
process, so pass it along (an ``Idempotency-Key`` header, a client token, a message id).
"""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from agentckpt._core.codec import DEFAULT_LIMITS, Limits, decode, encode
from agentckpt._core.compression import pack, unpack

__all__ = ["decode_result", "encode_result", "idempotency_key"]

# Fixed namespace: the keys must be the same in every process and every version.
_NAMESPACE = uuid.UUID("6f1c1c4e-5b1a-4d0e-9a59-3a8f2f4c7d21")


def idempotency_key(run_id: UUID, step: int, key: str) -> str:
    """A deterministic key for the effect ``key`` of ``step`` of ``run_id``.

    A UUID (version 5) in text form: 36 characters, accepted by most APIs that take an
    idempotency key. The same inputs give the same key in any process.
    """
    return str(uuid.uuid5(_NAMESPACE, f"{run_id}/{step}/{key}"))


def encode_result(result: Any, *, limits: Limits = DEFAULT_LIMITS) -> tuple[str, bytes]:
    """``(codec, payload)`` of an effect's result; it must be a JSON value."""
    return pack(encode(result, limits=limits))


def decode_result(codec: str, payload: bytes, *, where: str) -> Any:
    """The recorded result, exactly as it was encoded."""
    return decode(unpack(codec, bytes(payload), where=where))
