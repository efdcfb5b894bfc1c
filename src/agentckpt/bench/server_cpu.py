"""The PostgreSQL server's CPU spent on this benchmark process's connections.

Every connection the benchmark opens (agentckpt's pool, the baselines', LangGraph's)
carries the ``application_name`` :data:`APPLICATION` names, set once through libpq's
``PGAPPNAME`` before any connection opens. The server backends serving them are found in
``pg_stat_activity`` by that name, and their CPU read from ``/proc/<pid>/stat``
(``utime + stime``), which works when the server runs on this machine (as the
benchmark's default ``127.0.0.1`` server does); otherwise server CPU is reported as not
measured. The WAL writer, checkpointer and other shared processes are not counted: they
serve every client of the server, and other engineers share this one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

__all__ = ["APPLICATION", "ServerCpu", "name_connections"]

APPLICATION = f"agentckpt-bench-{os.getpid()}"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@contextmanager
def name_connections() -> Iterator[None]:
    """Give every libpq connection opened inside the block the benchmark's name; the
    previous ``PGAPPNAME`` comes back after it (``main`` may run inside another program,
    a test suite say, whose own connections must keep their names)."""
    previous = os.environ.get("PGAPPNAME")
    os.environ["PGAPPNAME"] = APPLICATION
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PGAPPNAME", None)
        else:
            os.environ["PGAPPNAME"] = previous


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command name: state is field 3, utime 14 and stime 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(slots=True)
class ServerCpu:
    """CPU seconds of the server backends serving this process, sampled twice."""

    url: str
    _start: dict[int, float] | None = None

    async def _sample(self) -> dict[int, float] | None:
        async with await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, application_name="agentckpt-bench-probe"
        ) as conn:
            cur = await conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (APPLICATION,)
            )
            pids = [int(row[0]) for row in await cur.fetchall()]
        found = {pid: cpu for pid in pids if (cpu := _cpu_seconds(pid)) is not None}
        if pids and not found:
            return None  # the server is not on this machine (or /proc is not readable)
        return found

    async def start(self) -> None:
        """Take the first sample."""
        self._start = await self._sample()

    async def stop(self) -> float | None:
        """CPU seconds the backends spent since :meth:`start` (a backend that opened in
        between counts from its start; one that closed in between is lost, so call this
        before the subject closes its connections); None when not measurable."""
        end = await self._sample()
        if end is None or self._start is None:
            return None
        return sum(cpu - self._start.get(pid, 0.0) for pid, cpu in end.items())
