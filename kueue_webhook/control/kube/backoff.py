"""Exponential backoff with full jitter, as a pure value so its schedule is testable without sleeping.

Many replicas reconnecting to one API server after an outage must not retry in lock-step, so each delay
is drawn uniformly from ``[base/2, min(cap, base * 2**attempt)]`` (half-jitter keeps a floor so a retry
is never immediate). A success resets the attempt count.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delay schedule; ``rng`` is injectable so tests are deterministic."""

    base: float = 0.2
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def next_delay(self) -> float:
        """The delay before the next retry; each call counts one more failure."""
        ceiling = min(self.cap, self.base * (2**self.attempt))
        self.attempt = min(self.attempt + 1, 62)
        return self.rng.uniform(min(self.base / 2, ceiling), ceiling)

    def reset(self) -> None:
        self.attempt = 0
