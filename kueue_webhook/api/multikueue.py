"""MultiKueue's names on the wire and the webhook's ``spec.managedBy`` default, as pure data and functions.

A manager cluster queues a Job, reserves quota for it, and runs it in a worker cluster. The manager's own
copy must never run: its ``spec.managedBy`` names MultiKueue, so the manager's Job controller (and JobSet
controller) leave it alone. Kueue's webhook sets that field on CREATE for a Job (or JobSet) whose
LocalQueue's ClusterQueue lists an AdmissionCheck served by MultiKueue, when the field is unset or names the
kind's own controller (Kueue's jobframework ``ApplyDefaultForManagedBy`` with each kind's
``CanDefaultManagedBy``). The same names label the copies in the workers (``ORIGIN_LABEL``,
``PREBUILT_WORKLOAD_LABEL``), so a Kueue worker and ours read each other's copies alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``spec.controllerName`` of an AdmissionCheck served by MultiKueue, and the ``spec.managedBy`` it sets
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
#: the label on every copy in a worker: which manager (``multiKueue.origin``) made it
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
#: Kueue's default ``multiKueue.origin``
DEFAULT_ORIGIN = "multikueue"
#: the label on a worker's job copy naming the Workload copy made for it before it (Kueue's prebuilt
#: Workload)
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"

#: kinds whose objects MultiKueue dispatches, with the ``spec.managedBy`` value of their own controller
#: (Kueue's ``CanDefaultManagedBy``: unset or this value is replaced by ``MULTIKUEUE_CONTROLLER``)
OWN_CONTROLLERS: dict[tuple[str, str], str] = {
    ("batch", "Job"): "kubernetes.io/job-controller",
    ("jobset.x-k8s.io", "JobSet"): "jobset.sigs.k8s.io/jobset-controller",
}


def dispatchable(group: str, kind: str) -> bool:
    """Whether objects of this kind can run in a worker (Kueue has a MultiKueue adapter for it)."""
    return (group, kind) in OWN_CONTROLLERS


def managed_by(obj: Mapping[str, Any]) -> str:
    """The object's ``spec.managedBy`` ("" when unset)."""
    spec = obj.get("spec")
    value = spec.get("managedBy") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) else ""


def managed_by_default_ops(group: str, kind: str, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch that makes MultiKueue manage an object queued to a ClusterQueue with a MultiKueue
    check; empty when the kind has no MultiKueue adapter or ``spec.managedBy`` names another controller."""
    own = OWN_CONTROLLERS.get((group, kind))
    current = managed_by(obj)
    if own is None or current not in ("", own) or not isinstance(obj.get("spec"), Mapping):
        return []
    op = "replace" if "managedBy" in obj["spec"] else "add"
    return [{"op": op, "path": "/spec/managedBy", "value": MULTIKUEUE_CONTROLLER}]


def cluster_queue_checks(cluster_queue: Mapping[str, Any]) -> list[str]:
    """The AdmissionCheck names a ClusterQueue lists (``admissionChecks`` or ``admissionChecksStrategy``)."""
    spec = cluster_queue.get("spec") or {}
    names = [str(n) for n in spec.get("admissionChecks") or [] if isinstance(n, str)]
    strategy = spec.get("admissionChecksStrategy") or {}
    for rule in strategy.get("admissionChecks") or []:
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
            names.append(rule["name"])
    return names
