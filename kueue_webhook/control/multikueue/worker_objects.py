"""Reading and deleting this manager's copies in one worker cluster.

Every worker call the dispatcher and the garbage collection make that is not a write of a copy's content
goes through here: a read that tells "not there" (None) from "the worker did not answer"
(``WorkerUnreachable``), a delete that takes the dependents with it, and the removal of a Workload's copies
in the order Kueue's ``RemoveRemoteObjects`` uses. Only objects carrying this manager's origin label are
ever deleted.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from kueue_webhook.api.multikueue import ORIGIN_LABEL, copies_pods, prebuilt_workload_name
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.multikueue.copies import owned_by_origin

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")


class WorkerUnreachable(Exception):
    """A worker's API server did not answer: treated as unreachable for this pass."""


def origin_selector(origin: str) -> str:
    """The label selector of this manager's copies."""
    return f"{ORIGIN_LABEL}={origin}"


async def get_object(client: KubeClient, kind: Kind, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(kind, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    except (TimeoutError, OSError) as exc:
        raise WorkerUnreachable(str(exc)) from exc


async def delete_object(client: KubeClient, kind: Kind, name: str, namespace: str) -> None:
    """Delete with its dependents in the background (a Job's default would orphan its pods)."""
    try:
        await client.request(
            "DELETE",
            kind.path(namespace=namespace, name=name),
            body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )
    except ApiError as exc:
        if exc.status != 404:
            raise


async def delete_pod_copies(
    client: KubeClient, kind: Kind, *, namespace: str, workload_name: str, origin: str
) -> int:
    """Delete the worker's pod copies that name ``workload_name``, found by the origin label and the
    prebuilt-workload name rather than by the manager's pods, which may be gone already (garbage
    collection); how many were found."""
    found = 0
    async for page, _ in client.list_pages(kind, namespace=namespace, label_selector=origin_selector(origin)):
        for remote in page:
            if prebuilt_workload_name(remote) != workload_name:
                continue
            found += 1
            await delete_object(client, kind, str(remote["metadata"]["name"]), namespace)
    return found


async def list_copies(client: KubeClient, kind: Kind, origin: str) -> list[JSON]:
    items: list[JSON] = []
    async for page, _ in client.list_pages(kind, label_selector=origin_selector(origin)):
        items.extend(page)
    return items


async def delete_copies(
    client: KubeClient,
    cluster: str,
    *,
    origin: str,
    namespace: str,
    name: str,
    job_kind: Kind | None,
    job_name: str,
) -> None:
    """The job copy first (with its pods), then the Workload copy, without its finalizer (Kueue's
    ``RemoveRemoteObjects``); only objects carrying this manager's origin."""
    if job_kind is not None and copies_pods(job_kind.group, job_kind.kind):
        await delete_pod_copies(
            client,
            job_kind,
            namespace=namespace,
            workload_name=name,
            origin=origin,
        )
    elif job_kind is not None and job_name:
        job = await get_object(client, job_kind, job_name, namespace)
        if job is not None and owned_by_origin(job, origin):
            await delete_object(client, job_kind, job_name, namespace)
    remote = await get_object(client, WORKLOADS, name, namespace)
    if remote is None or not owned_by_origin(remote, origin):
        return
    if (remote.get("metadata") or {}).get("finalizers"):
        version = remote["metadata"].get("resourceVersion")
        with contextlib.suppress(ApiError):
            await client.patch(
                WORKLOADS,
                name=name,
                namespace=namespace,
                patch={"metadata": {"finalizers": None, "resourceVersion": version}},
            )
    await delete_object(client, WORKLOADS, name, namespace)
    log.info("copy deleted", extra={"workload": f"{namespace}/{name}", "worker": cluster})
