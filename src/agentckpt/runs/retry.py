"""How many times a step is retried after a :class:`TransientError`, and how long to wait."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from agentckpt.errors import ConfigurationError

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Bounded retries with exponential backoff.

    A step gets ``max_attempts`` attempts in all. Before attempt ``n + 1`` the loop waits
    ``min(max_delay, initial_delay * multiplier ** (n - 1))``, spread by up to ``jitter``
    (a fraction: 0.1 is +-10 %) so that many workers hit by one outage do not retry in
    lockstep.

    Example::

        RetryPolicy(max_attempts=8, initial_delay=1.0, max_delay=60.0)
    """

    max_attempts: int = 5
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if type(self.max_attempts) is not int or self.max_attempts < 1:
            raise ConfigurationError(
                f"RetryPolicy.max_attempts must be an int >= 1, got {self.max_attempts!r}"
            )
        for name in ("initial_delay", "multiplier", "max_delay", "jitter"):
            value = getattr(self, name)
            # NaN passes the range checks below; True is an int.
            if type(value) not in (int, float) or not math.isfinite(value):
                raise ConfigurationError(
                    f"RetryPolicy.{name} must be a finite number, got {value!r}"
                )
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ConfigurationError(
                "RetryPolicy delays must be >= 0, got "
                f"initial_delay={self.initial_delay!r}, max_delay={self.max_delay!r}"
            )
        if self.multiplier < 1:
            raise ConfigurationError(
                f"RetryPolicy.multiplier must be >= 1, got {self.multiplier!r}"
            )
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"RetryPolicy.jitter must be in [0, 1], got {self.jitter!r}")

    def allows(self, attempt: int) -> bool:
        """True if another attempt may follow attempt number ``attempt`` (1-based)."""
        return attempt < self.max_attempts

    def delay(self, attempt: int, *, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        if self.jitter == 0:
            return base
        # rng() is in [0, 1): map it to a factor in [1 - jitter, 1 + jitter).
        return base * (1 - self.jitter + 2 * self.jitter * rng())
