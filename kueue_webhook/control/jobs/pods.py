"""The queueing mode of pods (Kueue's pod integration): gated on create, ungated when admitted, stopped by
deletion.

A pod on its own is an object with a Workload of its own (``own_objects``), except that its owners never
suspend it (Kueue's pods are top-level) and a StatefulSet's pod waits until its StatefulSet has put it in
its group (a LeaderWorkerSet's likewise). A pod in a group is reconciled under its group's key, all the
group's pods at once (``pod_groups``), and a group's Workload queues that key. A StatefulSet's or
LeaderWorkerSet's pod coming or changing queues its owner, which may have a pod to put in its group
(``statefulsets``, ``leaderworkersets``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kueue_webhook.api.integrations.leaderworkersets import awaits_group as awaits_lws_group
from kueue_webhook.api.integrations.pod_groups import group_name
from kueue_webhook.api.integrations.statefulsets import awaits_group
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.jobs.leaderworkersets import leaderworkerset_key_of
from kueue_webhook.control.jobs.own_objects import OwnObjects
from kueue_webhook.control.jobs.pod_groups import group_of_workload, reconcile_group
from kueue_webhook.control.jobs.queueing import GROUP_KEY, Host, ObjectKey
from kueue_webhook.control.jobs.statefulsets import statefulset_key_of

__all__ = ["Pods"]

JSON = dict[str, Any]


class Pods(OwnObjects):
    """Pods queued one by one, or by group."""

    suspended_for_ancestor = False

    def key(self, obj: JSON) -> ObjectKey:
        """A pod's own key, or its group's."""
        namespace, name = key_of(obj)
        if (group := group_name(obj)) is not None:
            return (self.integration.name, namespace, GROUP_KEY + group)
        return (self.integration.name, namespace, name)

    def on_change(self, host: Host, change: Change) -> None:
        current = change.new if change.new is not None else change.old
        if current is not None:
            integrations = host.context.configuration().integrations
            for parent in (
                statefulset_key_of(current, integrations),
                leaderworkerset_key_of(current, integrations),
            ):
                if parent is not None:
                    host.queue_key(parent)
            if (key := self.key(current))[2].startswith(GROUP_KEY):
                host.queue_key(key)
                return
        super().on_change(host, change)

    def keys_for_workload(self, workload: JSON) -> Iterable[ObjectKey]:
        if (group := group_of_workload(workload)) is not None:
            yield (self.integration.name, key_of(workload)[0], group)
        yield from super().keys_for_workload(workload)

    def waits_for_owner(self, obj: JSON) -> bool:
        # the Workload is its StatefulSet's or LeaderWorkerSet's, once it is in the group
        return awaits_group(obj) or awaits_lws_group(obj)

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        if key[2].startswith(GROUP_KEY):
            await reconcile_group(host, self.integration, key[1], key[2].removeprefix(GROUP_KEY))
            return True
        return await super().reconcile(host, key)
