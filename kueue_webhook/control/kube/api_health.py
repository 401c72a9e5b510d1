"""How busy the API server is, read from its answers; the budget of the writes that can wait.

Some writes carry a decision: a Workload's admission or eviction, a Job started or stopped, a finalizer.
They are never held back. Others only inform: Events, a pending Workload's reason, ClusterQueue and
LocalQueue status. They can wait, or be folded into a later write, and on a busy API server each of them
takes CPU from the decision writes and from every other client. So they draw from one budget whose rate
follows the API server's health, as a TCP sender's window follows the network's (AIMD):

* every request's latency feeds an EWMA; the floor is the lowest latency seen lately (what a request costs
  when nothing queues), so the judgement holds for an API server on loopback and for one across a WAN;
* once per ``window`` seconds the API server is judged congested when it answered 429 (API Priority and
  Fairness shed our load) or 5xx, or when the EWMA is above ``slowdown`` times the floor plus ``margin``;
  congested halves the rate (down to ``min_rate``), healthy grows it by half (up to ``max_rate``).

On a quiet cluster the budget sits at ``max_rate`` and nothing informational waits; under a burst it falls
within seconds to a trickle, and the informational writes coalesce (a queue's status is written once with
the latest numbers, a pending message once with the latest wording) instead of competing with admissions.
Pure arithmetic on a supplied clock: the asyncio waiting is the caller's.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

#: the answers that say "too busy": 429 Too Many Requests (API Priority and Fairness shed the request), the
#: 5xx family, and 0 for no answer at all (a timeout)
OVERLOADED = frozenset({0, 429, 500, 502, 503, 504})


class WriteBudget(Protocol):
    """What the informational writers ask before each write."""

    def take(self, *, keep: float = 0.0) -> float: ...


@dataclass(frozen=True, slots=True)
class HealthSettings:
    max_rate: float = 50.0
    min_rate: float = 5.0
    window: float = 1.0
    slowdown: float = 3.0
    margin: float = 0.010
    #: how far back the floor looks: long enough to span a burst, short enough to follow a moved server
    floor_horizon: float = 60.0
    ewma_weight: float = 0.1


class ApiHealth:
    """Latency and overload signals in; the informational write budget (a token bucket) out."""

    def __init__(
        self, settings: HealthSettings | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings or HealthSettings()
        self._clock = clock
        self.rate = self.settings.max_rate
        self.latency: float | None = None  # EWMA, seconds
        self._floors: deque[tuple[float, float]] = deque()  # (window start, lowest latency in it)
        self._overloaded = 0
        self._window_start = clock()
        self._tokens = self.settings.max_rate
        self._refilled = clock()
        self.congested = False

    # -- signals --------------------------------------------------------------------------------------

    def observe(self, latency: float, status: int) -> None:
        """One answered request (any verb but watch): ``latency`` seconds, HTTP ``status``."""
        self._advance()
        if status in OVERLOADED:
            self._overloaded += 1
        weight = self.settings.ewma_weight
        self.latency = latency if self.latency is None else (1 - weight) * self.latency + weight * latency
        now = self._clock()
        if self._floors and now - self._floors[-1][0] < self.settings.window:
            start, lowest = self._floors[-1]
            self._floors[-1] = (start, min(lowest, latency))
        else:
            self._floors.append((now, latency))
        while self._floors and now - self._floors[0][0] > self.settings.floor_horizon:
            self._floors.popleft()

    @property
    def floor(self) -> float | None:
        return min((lowest for _, lowest in self._floors), default=None)

    def _advance(self) -> None:
        """Judge each elapsed window once, and adjust the rate."""
        now = self._clock()
        elapsed = now - self._window_start
        if elapsed < self.settings.window:
            return
        self._window_start = now
        self.congested = self._judge()
        self._overloaded = 0
        s = self.settings
        if self.congested:
            self.rate = max(s.min_rate, self.rate / 2)
        else:
            self.rate = min(s.max_rate, self.rate * 1.5)

    def _judge(self) -> bool:
        if self._overloaded:
            return True
        floor, latency = self.floor, self.latency
        if floor is None or latency is None:
            return False
        return latency > self.settings.slowdown * floor + self.settings.margin

    # -- budget ---------------------------------------------------------------------------------------

    def take(self, *, keep: float = 0.0) -> float:
        """Take one token: 0 when one was free, else the seconds until the next one (nothing taken).

        ``keep`` is the share of a full bucket a lower-priority writer must leave to the others: Events
        (``keep=0.5``) are written only while the budget has room to spare, so under congestion they give way
        to pending reasons and queue status, which say the same things on the objects themselves."""
        self._advance()
        now = self._clock()
        burst = max(self.rate, 1.0)
        self._tokens = min(burst, self._tokens + (now - self._refilled) * self.rate)
        self._refilled = now
        needed = 1.0 + keep * burst
        if self._tokens >= needed:
            self._tokens -= 1.0
            return 0.0
        return (needed - self._tokens) / self.rate
