# GENERATED from effects_async.py by scripts/unasync.py; do not edit.
"""The effect journal: external actions recorded under (run, step, key), done once.

``effects.py`` is generated from ``effects_async.py`` by ``scripts/unasync.py``:
edit ``effects_async.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from agentckpt import _compat
from agentckpt._core.codec import DEFAULT_LIMITS, Limits
from agentckpt.crypto.sealing import EFFECT
from agentckpt.redaction import Redactor, redact
from agentckpt.runs import queries
from agentckpt.runs.effect_keys import decode_result, encode_result, idempotency_key
from agentckpt.store.store import Store

__all__ = ["NOT_RECORDED", "Effects"]

NOT_RECORDED: Any = object()
"""What :meth:`Effects.recorded` returns for an effect with no recorded result."""


class Effects:
    """Records and replays the results of a run's side effects.

    See :mod:`agentckpt.runs.effect_keys` for the at-least-once window and the idempotency
    key that closes it on the external side.
    """

    def __init__(
        self,
        store: Store,
        *,
        limits: Limits = DEFAULT_LIMITS,
        redactors: Sequence[Redactor] = (),
    ) -> None:
        self.store = store
        self.limits = limits
        self.redactors = tuple(redactors)
        # Runs whose effects were pruned by this object and that it has recorded none for
        # since: pruning them again would delete nothing (a run's effects are written by
        # its lease holder, through its own journal). A run not in it may hold effects
        # another process recorded, so its first prune always runs.
        self._pruned: set[UUID] = set()

    def recorded(self, run_id: UUID, step: int, key: str) -> Any:
        """The recorded result, or :data:`NOT_RECORDED` if there is none yet."""
        rows = self.store.backend.read(
            queries.GET_EFFECT, {"run_id": run_id, "step": step, "key": key}
        )
        if not rows:
            return NOT_RECORDED
        rows = self.store.open_rows(EFFECT, rows, run_id=run_id)
        return decode_result(
            rows[0]["codec"], rows[0]["payload"], where=f"run {run_id} step {step} effect {key!r}"
        )

    def record(self, run_id: UUID, step: int, key: str, result: Any) -> Any:
        """Record ``result`` unless a result is already recorded; return the recorded one.

        ``INSERT ... ON CONFLICT DO NOTHING`` then a read: when two workers race, both
        get the first result that was recorded.
        """
        result, _ = redact(result, self.redactors, path=f"/effects/{key}")
        codec, payload = self.store.sealing.seal(EFFECT, *encode_result(result, limits=self.limits))
        self._pruned.discard(run_id)
        self.store.backend.write(
            queries.INSERT_EFFECT,
            {"run_id": run_id, "step": step, "key": key, "codec": codec, "payload": payload},
        )
        stored = self.recorded(run_id, step, key)
        return result if stored is NOT_RECORDED else stored

    def perform(
        self,
        run_id: UUID,
        step: int,
        key: str,
        action: Callable[[str], Any],
    ) -> Any:
        """Return the recorded result of this effect, or run ``action`` once and record it.

        ``action`` receives the effect's idempotency key; its result must be a JSON
        value (dict, list, str, int, float, bool, None). An async ``action`` or a plain
        function both work here.
        """
        telemetry = self.store.telemetry
        attributes = {
            "db.system": self.store.backend.dialect,
            "agentckpt.run_id": str(run_id),
            "agentckpt.step": step,
        }
        found = self.recorded(run_id, step, key)
        if found is not NOT_RECORDED:
            with telemetry.span("agentckpt.effect.replay", attributes):
                telemetry.add("agentckpt.effect.replays", 1, {"db.system": attributes["db.system"]})
            return found
        with telemetry.span("agentckpt.effect.run", attributes):
            result = _compat.resolved(action(idempotency_key(run_id, step, key)))
            return self.record(run_id, step, key, result)

    def prune(self, run_id: UUID, below: int) -> None:
        """Forget the effects of steps before ``below``: they are never replayed again.

        No statement is sent when this journal pruned the run before and has recorded no
        effect for it since (a long run without effects prunes at every snapshot).
        """
        if run_id in self._pruned:
            return
        self.store.backend.write(queries.PRUNE_EFFECTS, {"run_id": run_id, "below": below})
        self._pruned.add(run_id)
