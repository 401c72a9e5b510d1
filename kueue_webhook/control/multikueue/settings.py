"""The MultiKueue dispatcher's settings: Kueue's ``multiKueue`` configuration fields and their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from kueue_webhook.api.multikueue import DEFAULT_ORIGIN
from kueue_webhook.control.multikueue.plan import ALL_AT_ONCE

#: Kueue's defaults (``multiKueue.workerLostTimeout``, ``gcInterval``, ``origin``, ``dispatcherName``)
WORKER_LOST_TIMEOUT = 15 * 60.0
GC_INTERVAL = 60.0
#: a Workload waiting on a timer (the worker-lost timeout) is looked at again at least this often
LONGEST_WAIT = 60.0
#: Kueue's incremental dispatcher's round (``incrementalDispatcherRoundTimeout``)
ROUND_TIMEOUT = 5 * 60.0


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    origin: str = DEFAULT_ORIGIN
    worker_lost_timeout: float = WORKER_LOST_TIMEOUT
    gc_interval: float = GC_INTERVAL
    longest_wait: float = LONGEST_WAIT
    dispatcher: str = ALL_AT_ONCE
    #: the Incremental dispatcher: workers added per round, and how long a round lasts (Kueue's 3, 5 min)
    step_size: int = 3
    round_timeout: float = ROUND_TIMEOUT


#: Kueue's defaults, all of them
DEFAULT_SETTINGS = DispatchSettings()
