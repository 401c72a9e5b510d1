"""What an admitted workload uses of its TAS flavors' nodes: each pod set's topology assignment, domain by
domain, times its per-pod requests (one ``pods`` each, as Kueue counts them).

Read from the recorded admission, so a restart rebuilds the usage from the Workloads alone, exactly as the
quota ledger is rebuilt; an assignment that cannot be read charges nothing (the Workload CRD refuses one).
"""

from __future__ import annotations

from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, TopologyCapacity, Usage

__all__ = ["topology_charges"]


def topology_charges(info: WorkloadInfo, tas: TopologyCapacity) -> list[tuple[str, tuple[str, ...], Usage]]:
    """``(flavor, domain values, usage)`` for every domain of every topology assignment of ``info``."""
    admission = info.admission
    if admission is None:
        return []
    charges: list[tuple[str, tuple[str, ...], Usage]] = []
    per_pod = {pod_set.name: pod_set.requests for pod_set in info.pod_sets}
    for assignment in admission.pod_set_assignments:
        topology = assignment.topology_assignment
        if topology is None:
            continue
        flavor = next((f for f in sorted(set(assignment.flavors.values())) if tas.topology_of(f)), None)
        if flavor is None:
            continue
        try:
            domains = decode(dict(topology))
        except TopologyAssignmentError:
            continue
        requests = per_pod.get(assignment.name, ())
        for domain in domains:
            usage: Usage = {resource: amount * domain.count for resource, amount in requests}
            usage[PODS] = usage.get(PODS, 0) + ONE_POD * domain.count
            charges.append((flavor, domain.values, usage))
    return charges
