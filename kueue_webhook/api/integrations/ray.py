"""What Kueue's webhooks refuse in a queued Ray object (``pkg/controller/jobs/raycluster`` ``ValidateCreate``,
shared by its RayCluster, RayJob and RayService webhooks, and the RayJob webhook's own rules).

A queued cluster may not autoscale: KubeRay's in-tree autoscaler would add workers beyond the pods the
Workload reserved quota for. Its pod sets (the head and one per worker group) must fit in a Workload (at most
18), and no worker group may be called ``head``, the head's pod set name. A queued RayJob must describe its
own cluster (one it would share through ``clusterSelector`` is not queued, and both at once is refused) and
must delete it when it ends (``shutdownAfterJobFinishes``), or the cluster would go on holding the quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.errors import FieldError

__all__ = ["MAX_POD_SETS", "ray_cluster_errors", "raycluster_errors", "rayjob_errors", "rayservice_errors"]

#: Kueue's ``MaxPodSets``: the most pod sets a Workload holds
MAX_POD_SETS = 18


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def ray_cluster_errors(cluster: Mapping[str, Any], path: str) -> list[FieldError]:
    """Kueue's ``raycluster.ValidateCreate`` of the cluster spec at ``path``."""
    errors = []
    if cluster.get("enableInTreeAutoscaling") is True:
        errors.append(
            FieldError.invalid(
                f"{path}.enableInTreeAutoscaling",
                True,
                "a queued Ray cluster cannot autoscale: its workers would grow beyond the quota it was "
                "admitted with",
            )
        )
    workers = cluster.get("workerGroupSpecs")
    workers = workers if isinstance(workers, list) else []
    if len(workers) + 1 > MAX_POD_SETS:
        errors.append(FieldError.too_many(f"{path}.workerGroupSpecs", len(workers) + 1, MAX_POD_SETS))
    for index, group in enumerate(workers):
        if isinstance(group, Mapping) and group.get("groupName") == "head":
            errors.append(
                FieldError.forbidden(
                    f"{path}.workerGroupSpecs[{index}].groupName", '"head" is reserved for the head group'
                )
            )
    return errors


def raycluster_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    return ray_cluster_errors(_spec(obj), "spec")


def rayservice_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    cluster = _spec(obj).get("rayClusterConfig")
    return ray_cluster_errors(cluster if isinstance(cluster, Mapping) else {}, "spec.rayClusterConfig")


def rayjob_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's RayJob webhook on a queued RayJob."""
    spec = _spec(obj)
    selector = spec.get("clusterSelector")
    cluster = spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return [
            FieldError.invalid(
                "spec.clusterSelector", selector, "a queued RayJob cannot use an existing cluster"
            )
        ]
    if selector:
        return []  # a RayJob on an existing cluster is not queued
    if not isinstance(cluster, Mapping):
        return [
            FieldError.required(
                "spec.rayClusterSpec", "a queued RayJob needs its own cluster (or a clusterSelector)"
            )
        ]
    errors = []
    if spec.get("shutdownAfterJobFinishes") is not True:
        errors.append(
            FieldError.invalid(
                "spec.shutdownAfterJobFinishes",
                bool(spec.get("shutdownAfterJobFinishes")),
                "a queued RayJob must delete its cluster when it ends, or the cluster would keep its quota",
            )
        )
    return errors + ray_cluster_errors(cluster, "spec.rayClusterSpec")
