"""The benchmark's VACUUM sweeper: beside the writes, not beside the timed reads."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from agentckpt.bench import runner
from agentckpt.bench.sites import PostgresSite
from agentckpt.bench.subjects import Place


def test_the_sweeper_stops_when_the_writes_end(
    pg_server_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = PostgresSite(
        pg_server_dsn.split("?")[0], pool_size=2, prefix=f"t_{uuid.uuid4().hex[:8]}"
    )
    vacuums: list[str] = []
    phase = ["writes"]
    vacuum = PostgresSite.vacuum

    async def counted(self: PostgresSite, place: Place) -> None:
        vacuums.append(phase[0])
        await vacuum(self, place)

    monkeypatch.setattr(PostgresSite, "vacuum", counted)

    async def measure(place: Place, settle: Any) -> None:
        await asyncio.sleep(0.25)  # the writes: sweeps every 0.05 s
        phase[0] = "settle"
        await settle()
        phase[0] = "reads"
        await asyncio.sleep(0.25)  # the timed reads: no sweep

    asyncio.run(runner._measure(site, "sweep", measure, keep=False, vacuum_every=0.05))
    assert vacuums.count("writes") >= 2
    # One VACUUM once the writes are over (the one the storage is read after), and none
    # beside the reads.
    assert vacuums[vacuums.index("settle") :] == ["settle"]
