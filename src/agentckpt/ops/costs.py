"""Tokens and cost by agent, model and day, from what runs keep in their metadata.

Conversations (and any run) roll their usage up into the run's metadata
(``input_tokens``, ``output_tokens``, ``cost_estimate_usd``; :data:`~agentckpt.ops.kinds.
USAGE_KEYS`). The model is the run's configured one: ``config["agent_config"]["model"]``
(conversations), else ``config["model"]``, else ``metadata["model"]``; "-" when none is
recorded. The day is the UTC day the run was created. Only numbers count: a usage field
holding anything else is ignored, not guessed at.

    for row in costs(store, agent_id="planner"):
        print(row.day, row.model, row.input_tokens, row.cost_usd)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from agentckpt._core.codec import decode
from agentckpt._core.metadata import decode_metadata
from agentckpt.ops import queries
from agentckpt.store.store import Store

__all__ = ["CostRow", "costs", "model_of"]

_BATCH = 1000


@dataclass(frozen=True, slots=True)
class CostRow:
    """The usage summed over the runs of one agent, model and day (UTC, ``YYYY-MM-DD``)."""

    agent_id: str
    model: str
    day: str
    runs: int
    input_tokens: int
    output_tokens: int
    cost_usd: float

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return asdict(self)


def model_of(config: Any, metadata: dict[str, Any]) -> str:
    """The model a run was configured with, "-" when it recorded none."""
    if isinstance(config, dict):
        agent = config.get("agent_config")
        if isinstance(agent, dict) and isinstance(agent.get("model"), str):
            return str(agent["model"])
        if isinstance(config.get("model"), str):
            return str(config["model"])
    model = metadata.get("model")
    return model if isinstance(model, str) else "-"


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


def _rows(store: Store, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    after: UUID | None = None
    while True:
        rows = store.backend.read(queries.COST_RUNS, params | {"after": after, "limit": _BATCH})
        yield from rows
        if len(rows) < _BATCH:
            return
        after = rows[-1]["run_id"]


def costs(
    store: Store,
    *,
    agent_id: str | None = None,
    kind: str | None = None,
    status: str | None = None,
) -> list[CostRow]:
    """Usage by agent, model and day over the runs that match; newest day first."""
    totals: dict[tuple[str, str, str], list[Any]] = {}
    params = {"agent_id": agent_id, "kind": kind, "status": status}
    for row in _rows(store, params):
        metadata = decode_metadata(row["metadata"])
        config = decode(bytes(row["config"])) if row["config"] is not None else {}
        key = (row["agent_id"], model_of(config, metadata), str(row["day"]))
        total = totals.setdefault(key, [0, 0, 0, 0.0])
        total[0] += 1
        total[1] += _number(metadata.get("input_tokens"))
        total[2] += _number(metadata.get("output_tokens"))
        total[3] += _number(metadata.get("cost_estimate_usd"))
    ordered = sorted(totals.items(), key=lambda item: (_desc(item[0][2]), item[0][0], item[0][1]))
    return [
        CostRow(agent, model, day, runs, int(tokens_in), int(tokens_out), round(cost, 6))
        for (agent, model, day), (runs, tokens_in, tokens_out, cost) in ordered
    ]


def _desc(day: str) -> tuple[int, ...]:
    """A key that sorts ``YYYY-MM-DD`` newest first."""
    return tuple(-int(part) for part in day.split("-"))
