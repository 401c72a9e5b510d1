"""The pods of a gated kind in a worker: Kueue's pod MultiKueue adapter, for a pod on its own and a pod group.

A pod has no ``spec.managedBy``, so the manager keeps its own pods from running another way: their
scheduling gate is never lifted while their Workload lists a MultiKueue check (``plan_job`` and
``plan_group`` with ``dispatched``). The dispatcher then does for the pods what it does for a job, through
the functions here, each about every pod of the Workload at once (one, or the whole group):

* ``sync_pods`` creates each pod's copy in the winning worker (``pod_copy``: the Workload copy's name in its
  prebuilt-workload annotation, so the worker adopts that Workload) and reads each copy's status back into
  the manager's pod (status subresource). A pod whose copy is gone while the Workload is being stopped (the
  worker deleted it, or was lost) shows no activity any more (``pod_without_activity``), so the group's
  reservation can be released.
* deleting them is ``worker_objects.delete_pod_copies``'s, with the worker's other deletes.

The manager's pods of a Workload are those the Workload names: its controlling pod, or every pod of the
group named after it, and only while they carry Kueue's admission gate (``local_pods``): a pod put into
someone else's group by its label alone is never copied.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations.builtin import ADMISSION_GATE
from kueue_webhook.api.integrations.pod_groups import IS_GROUP_WORKLOAD_ANNOTATION, group_name
from kueue_webhook.api.integrations.statefulsets import JOB_OWNER_GVK_ANNOTATION, JOB_OWNER_NAME_ANNOTATION
from kueue_webhook.api.multikueue import ORIGIN_LABEL
from kueue_webhook.control.cache.store import Store, controller_owner, key_of
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.multikueue.copies import (
    mirrored_pod_status,
    owned_by_origin,
    pod_copy,
    pod_without_activity,
)
from kueue_webhook.control.multikueue.worker_objects import get_object

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")

#: writes a manager pod's status (resourceVersion-checked; raises to retry on a conflict)
StatusWriter = Callable[[JSON, JSON], Awaitable[None]]


def is_group_workload(workload: Mapping[str, Any]) -> bool:
    """A pod group's Workload (owned by every pod of the group, none of them its controller)."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    return annotations.get(IS_GROUP_WORKLOAD_ANNOTATION) == "true"


def workload_owner(workload: Mapping[str, Any]) -> JSON | None:
    """What the Workload is for: its controlling owner; else, on a copy no worker object adopted yet, the
    owner its annotations name (a StatefulSet's or LeaderWorkerSet's Workload); else the pods of a group
    (owned by all its pods, none the controller). None for a Workload of nothing."""
    if (owner := controller_owner(dict(workload))) is not None:
        return owner
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    gvk, name = annotations.get(JOB_OWNER_GVK_ANNOTATION), annotations.get(JOB_OWNER_NAME_ANNOTATION)
    if isinstance(gvk, str) and ", Kind=" in gvk and isinstance(name, str) and name:
        api_version, kind = gvk.split(", Kind=", 1)
        return {"apiVersion": api_version, "kind": kind, "name": name}
    if is_group_workload(workload):
        return {"apiVersion": "v1", "kind": "Pod"}
    return None


def held(pod: Mapping[str, Any]) -> bool:
    """The pod carries Kueue's admission gate: only such pods are copied, since a worker lifts the gate
    only within its Workload's admitted count (a pod labelled into someone's group without being queued
    would otherwise run in the worker outside any quota)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, Mapping) and g.get("name") == ADMISSION_GATE for g in gates)


def local_pods(store: Store, kind: Kind, workload: Mapping[str, Any]) -> list[JSON] | None:
    """The manager's gated pods of ``workload``: the group's (by its name), or the one pod controlling it;
    None while the controlling pod is not in the store (yet)."""
    namespace, name = key_of(dict(workload))
    if is_group_workload(workload):
        return sorted(
            (pod for pod in store.items(kind, namespace=namespace) if group_name(pod) == name and held(pod)),
            key=lambda pod: str(pod["metadata"].get("name")),
        )
    owner = controller_owner(dict(workload)) or {}
    pod = store.get(kind, str(owner.get("name", "")), namespace)
    if pod is None or (pod.get("metadata") or {}).get("uid") != owner.get("uid"):
        return None
    return [pod] if held(pod) else []


async def sync_pods(
    client: KubeClient,
    kind: Kind,
    pods: list[JSON],
    *,
    workload_name: str,
    origin: str,
    create: bool,
    write_status: StatusWriter,
) -> None:
    """Create the missing copies (when ``create``) and read every copy's status back; a pod whose copy
    is gone when it may not be created again shows no activity."""
    for pod in pods:
        if is_deleting(pod):
            continue  # Kueue's adapter leaves a terminating manager pod alone
        namespace, name = key_of(pod)
        remote = await get_object(client, kind, name, namespace)
        if remote is None:
            if create:
                body = pod_copy(pod, workload_name=workload_name, origin=origin)
                try:
                    await client.create(kind, body, namespace=namespace)
                except ApiError as exc:
                    if exc.status != 409:
                        raise
                else:
                    log.info("pod dispatched", extra={"pod": f"{namespace}/{name}"})
            elif (status := pod_without_activity(pod)) is not None:
                await write_status(pod, status)
            continue
        if not owned_by_origin(remote, origin):
            raise RuntimeError(
                f"Pod {namespace}/{name} in the worker is not a copy made by this manager "
                f"({ORIGIN_LABEL}={origin} is missing)"
            )
        status = mirrored_pod_status(pod, remote)
        if status is not None:
            await write_status(pod, status)


async def reset_pods(pods: list[JSON], *, write_status: StatusWriter) -> None:
    """The manager's pods no longer show the activity of copies a worker can no longer speak for."""
    for pod in pods:
        if (status := pod_without_activity(pod)) is not None:
            await write_status(pod, status)
