"""The TAS node controller: a node of an admitted topology-aware Workload fails, the Workload says so.

Reconciled per node, when its Ready condition changes, it is created or deleted, or a pod placed on it by
node selector changes (Kueue's tas-node-controller with its default gates). For every admitted Workload whose
topology assignment names the node (or whose ``status.unhealthyNodes`` lists it), the pure rule
(``kueue_webhook.api.node_failures``) decides: record the node in ``status.unhealthyNodes``, take it off
again, or evict the Workload (``NodeFailures``) when a second node fails. Pods ungated onto the failed node
but never bound to it are marked Failed (``TerminatedByKueue``) so their owner replaces them; the new pods
wait at the topology gate.

A recorded node is then handed to the replacement search (``ReplacementSearch``): a new assignment is
written with the node list cleared (the ungater then places the waiting pods on the new domain); no
replacement evicts the Workload (Kueue's TASFailedNodeReplacementFailFast); no answer (no capacity view
configured) leaves the Workload marked, its pods for that node gated.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.node_failures import (
    NO_REPLACEMENT,
    NO_REPLACEMENT_MESSAGE,
    NODE_FAILURES,
    TERMINATED_CONDITION,
    AddUnhealthyNode,
    Evict,
    RemoveUnhealthyNode,
    ReplacementSearch,
    assigned_nodes,
    decide,
    node_state,
    stranded_pods,
    unhealthy_nodes,
)
from kueue_webhook.api.topology_pods import HOSTNAME_LABEL
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.conditions import evicted_status, now_rfc3339
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.milestones import count_eviction
from kueue_webhook.control.topology.ungater import PodPatcher, is_placed_by_topology
from kueue_webhook.control.topology.watch import NODES, PODS, TopologyWatch, is_terminated

__all__ = ["NodeFailures"]

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.topology")


def _ready(node: JSON | None) -> bool | None:
    return node_state(node).ready if node is not None else None


class NodeFailures:
    """Marks, clears and evicts topology-aware Workloads as their nodes fail and recover; runs while
    leading."""

    def __init__(
        self,
        context: ControlContext,
        client: PodPatcher,
        watch: TopologyWatch,
        *,
        replacement: ReplacementSearch | None = None,
    ) -> None:
        self.context = context
        self.client = client
        self.watch = watch
        self.replacement = replacement
        self.queue: WorkQueue[str] = WorkQueue()
        #: node -> the Workloads listing it in ``status.unhealthyNodes``
        self._listed: dict[str, set[tuple[str, str]]] = {}

    # -- what to look at ------------------------------------------------------------------------------

    def on_watch_change(self, change: Change) -> None:
        if not self.context.is_leader():
            return
        if change.kind == NODES:
            if change.old is None or change.new is None or _ready(change.old) != _ready(change.new):
                self.queue.add(change.key[1])
            return
        pod = change.new if change.new is not None else change.old
        if change.kind != PODS or pod is None:
            return
        spec = pod.get("spec") or {}
        if spec.get("nodeName") and (change.new is None or is_terminated(pod)):
            self.queue.add(str(spec["nodeName"]))  # a pod on a NotReady node ended: the node may now fail
        elif not spec.get("nodeName") and (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL):
            self.queue.add(str(spec["nodeSelector"][HOSTNAME_LABEL]))  # a pod sent to a node that failed

    def on_workload_change(self, change: Change) -> None:
        """Keep the index of listed nodes; a Workload newly listing a node is handed to the replacement
        search."""
        if change.kind != WORKLOADS:
            return
        listed = set(unhealthy_nodes(change.new)) if change.new is not None else set()
        if change.old is not None:
            for node in set(unhealthy_nodes(change.old)) - listed:
                self._listed.get(node, set()).discard(change.key)
        for node in listed:
            self._listed.setdefault(node, set()).add(change.key)
            if self.replacement is not None:
                self.queue.add(node)

    def resync(self) -> None:
        self.resync_nodes()
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_nodes(self) -> None:
        """``resync`` but for the Workloads, which ``resync_workload`` takes one at a time afterwards."""
        self._listed.clear()
        for name in self.watch.store.keys(NODES):
            self.queue.add(name[1])

    def resync_workload(self, workload: JSON) -> None:
        for node in unhealthy_nodes(workload):
            self._listed.setdefault(node, set()).add(key_of(workload))
            self.queue.add(node)

    # -- deciding and writing -------------------------------------------------------------------------

    def _affected(self, node: str, *, failed: bool) -> list[JSON]:
        """The admitted topology-aware Workloads ``node`` matters to. A healthy node matters only to those
        listing it (the index answers without reading any Workload, so a relist of a thousand Ready nodes
        costs nothing); a failed one to every Workload whose assignment names it."""
        if not failed:
            keys = sorted(self._listed.get(node, ()))
            found = (self.context.store.get(WORKLOADS, name, namespace) for namespace, name in keys)
            return [w for w in found if w is not None and is_placed_by_topology(w)]
        return [
            workload
            for workload in self.context.store.items(WORKLOADS)
            if is_placed_by_topology(workload)
            and (node in unhealthy_nodes(workload) or node in assigned_nodes(workload))
        ]

    def _progressing(self, workload: Mapping[str, Any], node: str) -> bool:
        namespace, name = key_of(dict(workload))
        return any(
            (pod.get("spec") or {}).get("nodeName") == node
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and not is_terminated(pod)
            for pod in self.watch.pods_of(namespace, name)
        )

    async def reconcile(self, node: str) -> None:
        if not self.context.is_leader() or not self.watch.nodes_synced():
            return  # a node missing from a view not yet listed (or not allowed to list) has not failed
        state = node_state(self.watch.node(node))
        failed = not state.exists or state.ready is not True
        for workload in self._affected(node, failed=failed):
            action = decide(
                workload,
                node,
                state,
                progressing_pods=self._progressing(workload, node),
                evicted=is_true(workload, "Evicted"),
            )
            updated: JSON | None = workload
            if isinstance(action, AddUnhealthyNode | RemoveUnhealthyNode):
                updated = await self._set_unhealthy(workload, action)
            elif isinstance(action, Evict):
                await self._evict(workload, action.reason, action.message)
                continue
            if failed and updated is not None and node in unhealthy_nodes(updated):
                await self._fail_stranded_pods(updated, node)
                await self._replace(updated, node)

    async def _set_unhealthy(
        self, workload: JSON, action: AddUnhealthyNode | RemoveUnhealthyNode
    ) -> JSON | None:
        def build(current: JSON) -> JSON | None:
            listed = unhealthy_nodes(current)
            if isinstance(action, AddUnhealthyNode):
                if action.node in listed:
                    return None
                listed = [*listed, action.node]
            else:
                if action.node not in listed:
                    return None
                listed = [name for name in listed if name != action.node]
            return {"unhealthyNodes": [{"name": name} for name in listed] or None}

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        verb = "marked" if isinstance(action, AddUnhealthyNode) else "cleared"
        log.info(
            f"unhealthy node {verb}",
            extra={"workload": "/".join(key_of(workload)), "node": action.node},
        )
        return updated or self.context.store.get(WORKLOADS, *reversed(key_of(workload)))

    async def _evict(self, workload: JSON, reason: str, message: str) -> None:
        def build(current: JSON) -> JSON | None:
            if is_true(current, "Evicted") or is_true(current, "Finished"):
                return None
            status = evicted_status(
                current,
                reason=reason,
                message=message,
                preemption_reason="",
                now=now_rfc3339(),
                counted_as=(reason, ""),
            )
            status["unhealthyNodes"] = None  # Kueue resets them on eviction
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        count_eviction(self.context, updated, reason, "")
        self.context.events.record(updated, type="Normal", reason=f"EvictedDueTo{reason}", message=message)
        log.info("evicted: node failures", extra={"workload": "/".join(key_of(updated)), "decision": "evict"})

    async def _fail_stranded_pods(self, workload: JSON, node: str) -> None:
        namespace, name = key_of(workload)
        kind, reason, message = TERMINATED_CONDITION
        for pod in stranded_pods(self.watch.pods_of(namespace, name), node):
            conditions = list((pod.get("status") or {}).get("conditions") or [])
            conditions.append(
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            pod_name = str((pod.get("metadata") or {}).get("name"))
            try:
                updated = await self.client.patch(
                    PODS,
                    name=pod_name,
                    namespace=namespace,
                    patch={"status": {"phase": "Failed", "conditions": conditions}},
                    patch_type="merge",
                    subresource="status",
                )
            except ApiError as exc:
                if exc.status == 404:
                    continue
                raise
            self.watch.remember(updated)
            self.context.events.record(updated, type="Normal", reason="PodTerminatedByKueue", message=message)
            log.info("pod failed: its node failed", extra={"pod": f"{namespace}/{pod_name}", "node": node})

    async def _replace(self, workload: JSON, node: str) -> None:
        if self.replacement is None:
            return
        found = self.replacement(workload, node)
        if found is None:
            return
        if found is NO_REPLACEMENT:
            await self._evict(
                workload, NODE_FAILURES, NO_REPLACEMENT_MESSAGE.format(",".join(unhealthy_nodes(workload)))
            )
            return
        assignments = found

        def build(current: JSON) -> JSON | None:
            if node not in unhealthy_nodes(current) or not is_placed_by_topology(current):
                return None
            return {"admission": {"podSetAssignments": assignments}, "unhealthyNodes": None}

        if await self.context.writer.patch_status(WORKLOADS, workload, build) is not None:
            log.info("failed node replaced", extra={"workload": "/".join(key_of(workload)), "node": node})

    async def run(self) -> None:
        def failed(node: str, exc: BaseException) -> None:
            if isinstance(exc, NotLeader):
                return
            log.warning("node failure handling failed; retrying", extra={"node": node, "error": repr(exc)})
            asyncio.get_running_loop().call_later(1.0, self.queue.add, node)

        await self.queue.serve(self.reconcile, on_error=failed)
