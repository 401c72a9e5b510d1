"""Which queueing mode each integration has (``mode_of``), and the mode of a kind with nothing of its own.

This is the one place that reads how an ``Integration`` is queued: by a scheduling gate (pods), through its
pods one by one (a Deployment: ``ThroughPods``), as a group of its pods (a StatefulSet), as a group of pods
per replica (a LeaderWorkerSet), or itself (every other kind). Everything else asks the mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kueue_webhook.api.integrations import Integration
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.jobs.leaderworkersets import LeaderWorkerSets
from kueue_webhook.control.jobs.own_objects import KindMode, OwnObjects
from kueue_webhook.control.jobs.pods import Pods
from kueue_webhook.control.jobs.queueing import Host, ObjectKey, QueueingMode
from kueue_webhook.control.jobs.statefulsets import StatefulSets

__all__ = ["ThroughPods", "mode_of"]

JSON = dict[str, Any]


class ThroughPods(KindMode):
    """A kind whose template is marked so that each of its pods is queued on its own (a Deployment's): it
    has nothing to watch or reconcile itself."""

    @property
    def has_objects(self) -> bool:
        return False

    def on_change(self, host: Host, change: Change) -> None:
        del host, change

    def keys_for_workload(self, workload: JSON) -> Iterable[ObjectKey]:
        del workload
        return ()

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        del host, key
        return False


def mode_of(integration: Integration) -> QueueingMode:
    """How objects of ``integration`` are queued."""
    if integration.gate is not None:
        return Pods(integration)
    if integration.through_pods == "pods":
        return ThroughPods(integration)
    if integration.through_pods == "group":
        return StatefulSets(integration)
    if integration.through_pods == "groups":
        return LeaderWorkerSets(integration)
    return OwnObjects(integration)
