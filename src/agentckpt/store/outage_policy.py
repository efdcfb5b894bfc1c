"""How long the store's users ride out an outage, and how they pace their retries.

One policy for every front door: the run loop, conversations and the framework adapters
retry a call that failed with :class:`~agentckpt.errors.UnavailableError` (no connection,
nothing written) or :class:`~agentckpt.errors.OutcomeUnknownError` (a commit that may have
landed; retrying the same commit is idempotent) until ``limit`` seconds have passed since
the first failure, then raise the last error. The store builds it from its
``outage_limit`` setting (:attr:`agentckpt.store.AsyncStore.outage`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agentckpt.errors import ConfigurationError, OutcomeUnknownError, UnavailableError

__all__ = ["OUTAGE_ERRORS", "OutagePolicy"]

# The errors an outage raises: the database is unreachable, failing over or frozen.
OUTAGE_ERRORS = (UnavailableError, OutcomeUnknownError)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutagePolicy:
    """Retry outage errors for up to ``limit`` seconds (0: never).

    Before retry ``n`` the caller waits ``min(max_delay, initial_delay * 2 ** (n - 1))``,
    spread by up to +-``jitter`` so that many agents hit by one outage do not retry in
    lockstep. The first delay is short because the store reconnects within about a
    second of a new primary appearing.
    """

    limit: float = 60.0
    initial_delay: float = 0.1
    max_delay: float = 1.0
    jitter: float = 0.2
    # Called as observer(error, retry) before each retry (the store's telemetry counts it).
    observer: Callable[[BaseException, int], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.limit < 0 or self.initial_delay < 0 or self.max_delay < self.initial_delay:
            raise ConfigurationError(
                "OutagePolicy needs limit >= 0 and 0 <= initial_delay <= max_delay, got "
                f"limit={self.limit!r}, initial_delay={self.initial_delay!r}, "
                f"max_delay={self.max_delay!r}"
            )
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"OutagePolicy.jitter must be in [0, 1], got {self.jitter!r}")

    def allows(self, since: float, now: float) -> bool:
        """True if an outage that began at ``since`` (monotonic seconds) may be retried."""
        return now - since < self.limit

    def delay(self, retry: int, *, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        base = min(self.max_delay, self.initial_delay * 2.0 ** (retry - 1))
        return base * (1 - self.jitter + 2 * self.jitter * rng())
