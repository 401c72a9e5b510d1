"""The winning worker's job, and its status mirrored into the manager's job.

Kueue's adapters' ``SyncJob``: the job is created in the worker that admitted the Workload's copy; from then
on its status is read back into the manager's job through the status subresource, so ``kubectl get`` on the
manager shows it running and completing, and spec changes Kueue follows (a RayService's serve config) are
written into the running copy. When the worker is lost, the pod counts read back from it are zeroed; a
suspended manager Job forgets the worker's ``startTime``. Every write is conditional on the resourceVersion
read: a job that changed meanwhile is read and decided again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.multikueue import ORIGIN_LABEL, copies_groups, gated
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.multikueue.copies import (
    gated_object_copy,
    job_copy,
    mirrored_status,
    owned_by_origin,
    remote_spec_ops,
    stale_start_time,
    without_pods,
)
from kueue_webhook.control.multikueue.worker_objects import get_object
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.writers import failed_test

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")


class JobMirror:
    """Writes a Workload's job into its worker and the worker's job status into the manager."""

    def __init__(self, context: ControlContext, *, origin: Callable[[], str]) -> None:
        self.context = context
        #: the origin label's value in force (the configuration's ``multiKueue.origin`` changes live)
        self._origin = origin

    async def sync_job(
        self, client: KubeClient, cluster: str, kind: Kind, local_job: JSON, workload_name: str
    ) -> None:
        """Create the job in the winning worker, or read its status back (Kueue's adapters' ``SyncJob``)."""
        origin = self._origin()
        namespace, name = key_of(local_job)
        remote = await get_object(client, kind, name, namespace)
        if remote is None:
            body = job_copy(local_job, workload_name=workload_name, origin=origin)
            if gated(kind.group, kind.kind):
                names_workload = not copies_groups(kind.group, kind.kind)
                body = gated_object_copy(body, local_job, names_workload=names_workload)
            try:
                await client.create(kind, body, namespace=namespace)
            except ApiError as exc:
                if exc.status != 409:
                    raise
            else:
                log.info(
                    "job dispatched",
                    extra={"job": f"{namespace}/{name}", "kind": kind.kind, "worker": cluster},
                )
            return
        if not owned_by_origin(remote, origin):
            raise RuntimeError(
                f"{kind.kind} {namespace}/{name} in worker {cluster} is not a copy made by this manager "
                f"({ORIGIN_LABEL}={origin} is missing)"
            )
        # a gated object's status is its manager controller's (Kueue's StatefulSet adapter reads none back)
        status = None if gated(kind.group, kind.kind) else mirrored_status(local_job, remote)
        if status is not None:
            await self.write_job_status(kind, local_job, status)
        ops = remote_spec_ops(local_job, remote)
        if ops:
            version = (remote.get("metadata") or {}).get("resourceVersion")
            test = {"op": "test", "path": "/metadata/resourceVersion", "value": version}
            try:
                await client.patch(
                    kind, name=name, namespace=namespace, patch=[test, *ops], patch_type="json"
                )
            except ApiError as exc:
                if exc.status == 409 or failed_test(exc):
                    raise RuntimeError(
                        f"{kind.kind} {namespace}/{name} in worker {cluster} changed meanwhile"
                    ) from exc
                raise
            log.info(
                "job spec synced", extra={"job": f"{namespace}/{name}", "kind": kind.kind, "worker": cluster}
            )

    async def reset_activity(self, kind: Kind, local_job: JSON) -> None:
        """Zero the pod counts read back from a worker that can no longer say they ended."""
        status = without_pods(local_job)
        if status is None:
            return
        await self.write_job_status(kind, local_job, status)
        log.info(
            "pods of an unreachable worker no longer counted", extra={"job": "/".join(key_of(local_job))}
        )

    async def clear_start_time(self, kind: Kind, local_job: JSON) -> None:
        """Forget the worker's ``startTime`` on a suspended manager Job, so the next worker's can be read
        back once it starts again (the Job controller would clear it, but it skips this Job)."""
        namespace, name = key_of(local_job)
        current = self.context.store.get(kind, name, namespace) or local_job
        if not stale_start_time(current):
            return
        version = (current.get("metadata") or {}).get("resourceVersion")
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "remove", "path": "/status/startTime"},
        ]
        try:
            await self.context.writer.client.patch(
                kind, name=name, namespace=namespace, patch=patch, patch_type="json", subresource="status"
            )
        except ApiError as exc:
            if exc.status == 409 or failed_test(exc):
                raise RuntimeError(f"{kind.kind} {namespace}/{name} changed meanwhile") from exc
            raise

    async def write_job_status(self, kind: Kind, local_job: JSON, status: JSON) -> None:
        namespace, name = key_of(local_job)
        version = (local_job.get("metadata") or {}).get("resourceVersion")
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace" if "status" in local_job else "add", "path": "/status", "value": status},
        ]
        try:
            await self.context.writer.client.patch(
                kind, name=name, namespace=namespace, patch=patch, patch_type="json", subresource="status"
            )
        except ApiError as exc:
            if exc.status == 409 or failed_test(exc):  # changed meanwhile: read again, decide again
                raise RuntimeError(f"{kind.kind} {namespace}/{name} changed meanwhile") from exc
            raise
