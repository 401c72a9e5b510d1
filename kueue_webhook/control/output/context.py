"""What every leader-side task of a replica shares, built once by the ``Controller``.

The scheduler loop and its pending-reason and queue-position writers, the Job reconciler, the queue status
and fair-sharing reporters and the admission-check controller all read the same store, write through the
same writer, record Events and metrics alike, and stop writing the moment leadership is lost. One frozen
object carries those collaborators, so each task's constructor names only what is its own (a rate, a worker
count, the core it reads) and a test builds one context of fakes where production builds it from live parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kueue_webhook.api.config import Configuration
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.api_health import WriteBudget
from kueue_webhook.control.output.events import EventSink
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer


@dataclass(frozen=True, slots=True)
class ControlContext:
    """The shared collaborators; ``is_leader`` and ``configuration`` are read afresh at every use."""

    store: Store
    writer: Writer
    events: EventSink
    metrics: Metrics
    #: whether this replica holds the Lease now: every write path checks it before writing (and the writer's
    #: client refuses any write sent after the Lease's renew deadline, whatever this said: ``leader.fence``)
    is_leader: Callable[[], bool]
    #: the configuration in force (the ConfigMap's, reloaded live)
    configuration: Callable[[], Configuration]
    #: what informational writes (pending reasons, queue status, Events) may spend, by the API server's
    #: health; decision writes never ask
    budget: WriteBudget
