"""When a streamed turn's partial state is written: the coalescing rule, without I/O.

While an assistant reply streams, every token changes the state; writing each one would
cost a durable commit per token. The partial state is buffered in memory instead and
written when, first of:

- ``interval`` seconds (default 0.5) have passed since the turn's last durable write
  and something changed since (checked on each update and by ``flush_if_due()``);
- a tool call completes (its result is expensive to redo, so it is written at once);
- the turn completes (always written, sealed, before the call returns).

A crash therefore loses at most the updates of the last ``interval`` seconds of the turn
in progress. The clock is injected (``time.monotonic`` by default) so tests drive it.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEFAULT_FLUSH_INTERVAL", "Coalescer"]

DEFAULT_FLUSH_INTERVAL = 0.5


class Coalescer:
    """Tracks unwritten changes and says when the interval trigger fires.

    Example::

        now = [0.0]
        c = Coalescer(0.5, clock=lambda: now[0])
        c.written()          # the user message was just committed
        c.changed(); c.due() # False: nothing is due before 0.5 s
        now[0] = 0.6
        c.due()              # True: write the partial state, then call c.written()
    """

    def __init__(self, interval: float, *, clock: Callable[[], float]) -> None:
        if interval < 0:
            raise ValueError(f"flush interval must be >= 0 seconds, got {interval}")
        self.interval = interval
        self._clock = clock
        self._last_write = clock()
        self._dirty = False

    @property
    def dirty(self) -> bool:
        """True when something changed since the last durable write."""
        return self._dirty

    def changed(self) -> None:
        """Note an in-memory change that is not durable yet."""
        self._dirty = True

    def written(self) -> None:
        """Note a durable write of everything changed so far; restarts the interval."""
        self._dirty = False
        self._last_write = self._clock()

    def restore(self, dirty: bool) -> None:
        """Put the unwritten-changes flag back as it was (a change was undone)."""
        self._dirty = dirty

    def due(self) -> bool:
        """True when there are unwritten changes and the interval has passed."""
        return self._dirty and self._clock() - self._last_write >= self.interval
