"""The topology ungater: the gated pods of an admitted topology-aware Workload get their domain's node
selector and lose the ``kueue.x-k8s.io/topology`` gate, pod by pod (Kueue's tas-topology-ungater).

A Workload is reconciled when it changes and when one of its pods does (its ``kueue.x-k8s.io/workload``
annotation names it). Which pod goes where is decided from the pods as they are now
(``kueue_webhook.api.topology_pods``): a pod already ungated counts against the domain its node selector
names, so a restart or a new leader continues where the last one stopped. Each ungating is one JSON Patch
that tests the gate is still at its place, removes it and sets the node selector; a pod someone else
changed meanwhile fails the test and is looked at again with its new state. The answer of each write is
put into the watch's store at once, so the next decision never places a pod twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.node_failures import unhealthy_nodes
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode
from kueue_webhook.api.topology_pods import (
    PODSET_LABEL,
    TOPOLOGY_GATE,
    Placement,
    owner_rank_source,
    place_gated_pods,
    pod_view,
    rank_source,
)
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.topology.watch import PODS, TopologyWatch, is_terminated, workload_of_pod

__all__ = ["PodPatcher", "TopologyUngater", "is_placed_by_topology", "ungate_ops"]

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.topology")


class PodPatcher(Protocol):
    async def patch(
        self,
        kind: Any,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: Any = "merge",
        subresource: str = "",
    ) -> JSON: ...


def is_placed_by_topology(workload: Mapping[str, Any]) -> bool:
    """Admitted (quota reserved, Admitted=True, not finished or evicted) with a topology assignment
    (Kueue's IsAdmittedByTAS)."""
    if not has_quota_reservation(workload) or not is_true(workload, "Admitted"):
        return False
    if is_true(workload, "Finished") or is_true(workload, "Evicted"):
        return False
    admission = (workload.get("status") or {}).get("admission") or {}
    return any(
        isinstance(a, Mapping) and isinstance(a.get("topologyAssignment"), dict)
        for a in admission.get("podSetAssignments") or []
    )


def ungate_ops(pod: Mapping[str, Any], node_selector: Mapping[str, str]) -> list[JSON] | None:
    """JSON Patch removing the topology gate (tested at its index) and merging ``node_selector`` into the
    pod's; None when the pod has no such gate."""
    spec = pod.get("spec") or {}
    gates = spec.get("schedulingGates") or []
    for index, gate in enumerate(gates):
        if isinstance(gate, Mapping) and gate.get("name") == TOPOLOGY_GATE:
            where = f"/spec/schedulingGates/{index}"
            selector = {**(spec.get("nodeSelector") or {}), **node_selector}
            return [
                {"op": "test", "path": where, "value": dict(gate)},
                {"op": "remove", "path": where},
                {"op": "add", "path": "/spec/nodeSelector", "value": selector},
            ]
    return None


def _owner(workload: Mapping[str, Any]) -> tuple[str, str]:
    for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
    return "", ""


class TopologyUngater:
    """Ungates the pods of admitted topology-aware Workloads; runs while leading."""

    def __init__(self, context: ControlContext, client: PodPatcher, watch: TopologyWatch) -> None:
        self.context = context
        self.client = client
        self.watch = watch
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()
        self.ungated = 0

    # -- what to look at ------------------------------------------------------------------------------

    def on_workload_change(self, change: Change) -> None:
        """Main store listener (while leading): an admitted topology-aware Workload is looked at."""
        if change.kind != WORKLOADS or change.new is None:
            return
        if is_placed_by_topology(change.new):
            self.queue.add(change.key)

    def on_watch_change(self, change: Change) -> None:
        """Watch store listener: a pod's change looks at its Workload again."""
        if change.kind != PODS or not self.context.is_leader():
            return
        pod = change.new if change.new is not None else change.old
        key = workload_of_pod(pod) if pod is not None else None
        if key is not None:
            self.queue.add(key)

    def resync(self) -> None:
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_workload(self, workload: JSON) -> None:
        """``resync`` for one Workload (a term's start hands each one to every controller in one pass)."""
        if is_placed_by_topology(workload):
            meta = workload.get("metadata") or {}
            self.queue.add((str(meta.get("namespace") or ""), str(meta.get("name") or "")))

    # -- deciding and writing -------------------------------------------------------------------------

    def placements(self, workload: Mapping[str, Any]) -> list[tuple[JSON, Placement]]:
        """Each pod to ungate now, with its placement (empty unless ``workload`` is placed by topology)."""
        if not is_placed_by_topology(workload):
            return []
        meta = workload.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        pod_sets = {str(p.get("name")): p for p in (workload.get("spec") or {}).get("podSets") or []}
        pods = [pod for pod in self.watch.pods_of(namespace, name) if not is_terminated(pod)]
        unhealthy = unhealthy_nodes(workload)
        out: list[tuple[JSON, Placement]] = []
        admission = (workload.get("status") or {}).get("admission") or {}
        for index, assignment in enumerate(admission.get("podSetAssignments") or []):
            topology = assignment.get("topologyAssignment")
            if not isinstance(topology, dict):
                continue
            set_name = str(assignment.get("name") or "")
            pod_set = pod_sets.get(set_name) or {}
            try:
                domains = decode(topology, f"status.admission.podSetAssignments[{index}].topologyAssignment")
            except TopologyAssignmentError as exc:
                log.warning(
                    "topology assignment unreadable",
                    extra={"workload": f"{namespace}/{name}", "error": str(exc)},
                )
                continue
            count = assignment.get("count", pod_set.get("count", 0))
            ranks = rank_source(pod_set) or owner_rank_source(*_owner(workload))
            members = {
                str((pod.get("metadata") or {}).get("name")): pod
                for pod in pods
                if ((pod.get("metadata") or {}).get("labels") or {}).get(PODSET_LABEL) == set_name
            }
            try:
                chosen = place_gated_pods(
                    topology["levels"],
                    domains,
                    map(pod_view, members.values()),
                    size=count if type(count) is int else 0,
                    ranks=ranks,
                    unhealthy_nodes=unhealthy,
                )
            except ValueError as exc:
                log.warning("pods left gated", extra={"workload": f"{namespace}/{name}", "error": str(exc)})
                continue
            out.extend((members[placement.pod], placement) for placement in chosen)
        return out

    async def reconcile(self, key: tuple[str, str]) -> None:
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            return
        for pod, placement in self.placements(workload):
            ops = ungate_ops(pod, placement.node_selector)
            if ops is None:
                continue
            try:
                updated = await self.client.patch(
                    PODS, name=placement.pod, namespace=namespace, patch=ops, patch_type="json"
                )
            except ApiError as exc:
                if exc.status in (404, 409, 422):  # gone, or changed under us: its watch event decides again
                    log.info(
                        "ungate skipped", extra={"pod": f"{namespace}/{placement.pod}", "error": exc.message}
                    )
                    continue
                raise
            self.watch.remember(updated)
            self.ungated += 1
            log.info(
                "pod ungated",
                extra={
                    "pod": f"{namespace}/{placement.pod}",
                    "workload": name,
                    "nodeSelector": placement.node_selector,
                },
            )

    async def run(self) -> None:
        def failed(key: tuple[str, str], exc: BaseException) -> None:
            if isinstance(exc, NotLeader):
                return
            log.warning(f"ungating failed; retrying: {exc!r}", extra={"workload": "/".join(key)})
            asyncio.get_running_loop().call_later(1.0, self.queue.add, key)

        await self.queue.serve(self.reconcile, on_error=failed)
