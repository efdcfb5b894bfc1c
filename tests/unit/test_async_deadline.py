"""``AsyncDeadline`` on the loop's one timer: a call past its deadline is cancelled, a call
that ended is never, and calls of different lengths in flight together each get theirs."""

from __future__ import annotations

import asyncio
import socket

from agentckpt._compat.deadline import _LOOP_WATCHES, AsyncDeadline


class FakeConnection:
    """A connection whose cancel request is only recorded."""

    def __init__(self) -> None:
        self.sock, self.peer = socket.socketpair()
        self.cancels = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    async def cancel_safe(self, *, timeout: float = 1.0) -> None:  # noqa: ASYNC109 (psycopg's)
        self.cancels += 1

    def close(self) -> None:
        self.sock.close()
        self.peer.close()


async def _call(conn: FakeConnection, seconds: float, runs: float) -> bool:
    watch = AsyncDeadline(conn, seconds, grace=0.05)
    async with watch:
        await asyncio.sleep(runs)
    return watch.expired


def test_only_the_calls_past_their_deadline_expire() -> None:
    async def main() -> tuple[list[bool], list[int], int]:
        conns = [FakeConnection() for _ in range(4)]
        try:
            expired = await asyncio.gather(
                _call(conns[0], 0.30, 0.01),  # ends long before its deadline
                _call(conns[1], 0.05, 0.15),  # past it: the earliest deadline
                _call(conns[2], 0.20, 0.01),
                _call(conns[3], 0.10, 0.25),  # past it, after the first fired
            )
            left = len(_LOOP_WATCHES[asyncio.get_running_loop()].calls)
            return list(expired), [c.cancels for c in conns], left
        finally:
            for conn in conns:
                conn.close()

    expired, cancels, left = asyncio.run(main())
    assert expired == [False, True, False, True]
    assert cancels == [0, 1, 0, 1]
    assert left == 0


def test_an_ended_call_never_fires_later() -> None:
    async def main() -> tuple[bool, int]:
        conn = FakeConnection()
        try:
            expired = await _call(conn, 0.05, 0.0)
            await asyncio.sleep(0.1)  # past the deadline the call had
            return expired, conn.cancels
        finally:
            conn.close()

    assert asyncio.run(main()) == (False, 0)
